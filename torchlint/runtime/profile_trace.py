"""Hot paths from an exported torch.profiler chrome trace (plain JSON; no torch needed).

In torch 2.13 ``FunctionEvent.stack`` is empty: Python frames are ``python_function``
events in the exported trace. The profile probe adds two kinds of ``user_annotation``
ranges while it profiles: ``line: models.py:12`` around each torch call a user line makes,
and ``module: encoder.layers.3.attn`` around each submodule's forward. Every aten operation
is attributed by time containment (per thread) to the innermost range of each kind and to
the innermost user ``python_function``. Backward operations run in
``autograd::engine::evaluate_function: XBackward0`` ranges that carry the ``Sequence
number`` of the forward operation that recorded them, so backward time goes to the forward
operation's line and module.

The other probes watch the same steps, and what they compute (a gradient's norm in an
optimizer hook, a loss read after ``backward()``, a tensor detached in a saved-tensor hook)
runs inside the program's lines and steps. An operation whose innermost Python frame, before
any of the user's, is a probe's (``probe_file``) is the probes' work: it is attributed to no
line, function or module, and the time of the probes' outermost frames is taken out of the
forward, backward and optimizer shares and reported as ``probes_ms``.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

LINE_PREFIX = "line: "
MODULE_PREFIX = "module: "
BACKWARD_PREFIX = "autograd::engine::evaluate_function: "
_PY_FRAME = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<func>.+)$")


def load_events(path: str | Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        document = json.load(handle)
    events = document.get("traceEvents", []) if isinstance(document, dict) else document
    return [e for e in events if isinstance(e, dict) and e.get("ph") == "X" and "dur" in e]


class _Acc:
    __slots__ = ("fwd", "bwd", "calls", "self_fwd", "ops", "shapes")

    def __init__(self) -> None:
        self.fwd = self.bwd = self.self_fwd = 0.0
        self.calls = 0
        self.ops: dict[str, float] = defaultdict(float)
        self.shapes: list[str] = []


def analyse(events: list[dict[str, Any]], *, steps: int, lines: dict[str, dict[str, Any]] | None = None,
            modules: dict[str, str] | None = None, user_file: Callable[[str], str | None] | None = None,
            window_us: float | None = None, top: int = 15,
            probe_file: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """Summarise ``events`` (the trace's complete events) over ``steps`` profiled steps.

    ``lines`` maps a line annotation's name to {path, line, function, source}; ``modules``
    maps a module annotation's name to its dotted path; ``user_file`` turns a
    ``python_function`` file name into an absolute user path (None for library code);
    ``probe_file`` tells a file of the probes' own code.
    Times in the result are milliseconds per step.
    """
    lines = lines or {}
    modules = modules or {}
    per_step = 1.0 / max(1, steps) / 1000.0  # µs total -> ms per step
    by_tid: dict[Any, list[dict]] = defaultdict(list)
    for event in events:
        name = event.get("name", "")
        if name.startswith(LINE_PREFIX) or name.startswith(MODULE_PREFIX):
            # _RecordFunctionFast ranges are exported as cpu_op; they are annotations, not operations.
            event["cat"] = "user_annotation"
        by_tid[(event.get("pid"), event.get("tid"))].append(event)

    line_acc: dict[str, _Acc] = defaultdict(_Acc)
    module_acc: dict[str, _Acc] = defaultdict(_Acc)
    func_acc: dict[tuple[str, int, str], _Acc] = defaultdict(_Acc)
    op_self: dict[str, float] = defaultdict(float)
    op_total: dict[str, float] = defaultdict(float)
    op_calls: dict[str, int] = defaultdict(int)
    op_shapes: dict[str, str] = {}
    seq_owner: dict[int, tuple[str | None, str | None, tuple | None]] = {}
    backward_ops: list[tuple[int | None, float, str]] = []
    split = {"forward": 0.0, "backward": 0.0, "optimizer": 0.0}
    first_ts, last_end = None, None
    py_cache: dict[str, tuple | None] = {}

    def py_user(name: str) -> tuple | None:
        if name in py_cache:
            return py_cache[name]
        found = None
        match = _PY_FRAME.match(name)
        if match and user_file is not None:
            path = user_file(match.group("file"))
            if path:
                found = (path, int(match.group("line")), match.group("func"))
        py_cache[name] = found
        return found

    probe_cache: dict[str, bool] = {}

    def py_probe(name: str) -> bool:
        found = probe_cache.get(name)
        if found is None:
            match = _PY_FRAME.match(name) if probe_file is not None else None
            found = probe_cache[name] = bool(match and probe_file(match.group("file")))
        return found

    def probes_own(stack: list[dict]) -> bool:
        """Whether the innermost Python frame that is a probe's or the user's is a probe's."""
        for e in reversed(stack):
            if e.get("cat") == "python_function":
                if py_probe(e["name"]):
                    return True
                if py_user(e["name"]):
                    return False
        return False

    probes_total = 0.0
    root_modules = {name for name, path in modules.items() if path == ""}
    # The probe adds its ranges only while profiling: the first one marks the window's start.
    # A range that began before it (the optimizer step whose hook started the profiler) is
    # cut off there rather than counted whole ...
    starts = [float(e["ts"]) for e in events if e.get("name", "").startswith((LINE_PREFIX, MODULE_PREFIX))]
    window_start = min(starts) if starts else None

    window_end = window_start + window_us if window_start is not None and window_us is not None else None

    def clipped(ts: float, dur: float) -> float:
        # ... and so is the one whose hook stopped it (it "ends" after the profiler stopped).
        start = ts if window_start is None else max(ts, window_start)
        end = ts + dur if window_end is None else min(ts + dur, window_end)
        return max(0.0, end - start)
    for events_of_thread in by_tid.values():
        events_of_thread.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[dict] = []
        for event in events_of_thread:
            ts, dur = float(event["ts"]), float(event["dur"])
            end = ts + dur
            while stack and float(stack[-1]["ts"]) + float(stack[-1]["dur"]) <= ts:
                stack.pop()
            cat, name = event.get("cat"), event.get("name", "")
            first_ts = ts if first_ts is None else min(first_ts, ts)
            last_end = end if last_end is None else max(last_end, end)
            if cat == "python_function" and probe_file is not None and py_probe(name):
                if not any(e.get("cat") == "python_function" and py_probe(e["name"]) for e in stack):
                    # The probes' outermost frame: its time is theirs, not the share it runs in.
                    spent = clipped(ts, dur)
                    probes_total += spent
                    share = _share_of(stack, root_modules)
                    if share is not None:
                        split[share] -= spent
            elif cat == "user_annotation":
                if name in root_modules:
                    split["forward"] += dur
                elif name.startswith("Optimizer.step#") or name.startswith("Optimizer.zero_grad#"):
                    split["optimizer"] += clipped(ts, dur)
                if name.startswith(MODULE_PREFIX) and name in modules:
                    acc = module_acc[modules[name]]
                    acc.fwd += dur
                    acc.self_fwd += dur
                    acc.calls += 1
                    parent = next((e for e in reversed(stack) if e.get("cat") == "user_annotation"
                                   and e.get("name", "").startswith(MODULE_PREFIX) and e["name"] in modules), None)
                    if parent is not None:
                        module_acc[modules[parent["name"]]].self_fwd -= dur
                elif name.startswith(LINE_PREFIX):
                    line_acc[name].calls += 1
            elif cat == "cpu_op" and probe_file is not None and probes_own(stack):
                pass  # the probes' work: no line's, function's, module's or op table's
            elif cat == "cpu_op":
                parent_op = next((e for e in reversed(stack) if e.get("cat") == "cpu_op"), None)
                op_total[name] += dur
                op_self[name] += dur
                op_calls[name] += 1
                if parent_op is not None:
                    op_self[parent_op["name"]] -= dur
                args = event.get("args") or {}
                if name not in op_shapes and args.get("Input Dims"):
                    op_shapes[name] = _shapes(args["Input Dims"])
                in_backward = parent_op is not None and parent_op["name"].startswith(BACKWARD_PREFIX)
                in_backward = in_backward or any(e.get("name", "").startswith(BACKWARD_PREFIX) for e in stack if e.get("cat") == "cpu_op")
                line_name = next((e["name"] for e in reversed(stack) if e.get("cat") == "user_annotation"
                                  and e.get("name", "").startswith(LINE_PREFIX)), None)
                module_name = next((modules[e["name"]] for e in reversed(stack) if e.get("cat") == "user_annotation"
                                    and e.get("name", "") in modules), None)
                py = next((py_user(e["name"]) for e in reversed(stack) if e.get("cat") == "python_function"
                           and py_user(e["name"])), None)
                seq = args.get("Sequence number")
                if name.startswith(BACKWARD_PREFIX):
                    if parent_op is None:
                        split["backward"] += clipped(ts, dur)
                        backward_ops.append((seq, dur, name[len(BACKWARD_PREFIX):]))
                elif parent_op is None and not in_backward:
                    if line_name is not None:
                        acc = line_acc[line_name]
                        acc.fwd += dur
                        acc.ops[name] += dur
                        if len(acc.shapes) < 3 and args.get("Input Dims"):
                            shape = f"{name.replace('aten::', '')}{_shapes(args['Input Dims'])}"
                            if shape not in acc.shapes:
                                acc.shapes.append(shape)
                    if py is not None:
                        func_acc[py].fwd += dur
                        func_acc[py].calls += 1
                if seq is not None and not in_backward and not name.startswith(BACKWARD_PREFIX) and seq not in seq_owner:
                    seq_owner[seq] = (line_name, module_name, py)
            stack.append(event)

    for seq, dur, node in backward_ops:
        owner = seq_owner.get(seq) if seq is not None else None
        if owner is None:
            continue
        line_name, module_name, py = owner
        if line_name is not None:
            line_acc[line_name].bwd += dur
            line_acc[line_name].ops[f"{node} (backward)"] += dur
        if module_name is not None:
            # Backward of a module's ops counts for it and its parents.
            parts = module_name.split(".") if module_name else []
            for depth in range(len(parts) + 1):
                module_acc[".".join(parts[:depth])].bwd += dur
        if py is not None:
            func_acc[py].bwd += dur

    def ms(value: float) -> float:
        return round(value * per_step, 4)

    hot_lines = []
    for name, acc in line_acc.items():
        info = lines.get(name, {})
        hot_lines.append({
            "name": name[len(LINE_PREFIX):], "path": info.get("path"), "line": info.get("line"),
            "function": info.get("function", ""), "source": info.get("source", ""),
            "forward_ms": ms(acc.fwd), "backward_ms": ms(acc.bwd), "total_ms": ms(acc.fwd + acc.bwd),
            "calls_per_step": round(acc.calls / max(1, steps), 2),
            "ops": [op for op, _ in sorted(acc.ops.items(), key=lambda kv: -kv[1])[:4]],
            "shapes": acc.shapes,
        })
    hot_lines.sort(key=lambda r: -r["total_ms"])
    hot_modules = [{"path": path, "forward_ms": ms(acc.fwd), "self_forward_ms": ms(max(0.0, acc.self_fwd)),
                    "backward_ms": ms(acc.bwd), "total_ms": ms(acc.fwd + acc.bwd),
                    "calls_per_step": round(acc.calls / max(1, steps), 2)}
                   for path, acc in module_acc.items()]
    hot_modules.sort(key=lambda r: (-r["total_ms"], r["path"]))
    ops = [{"name": name, "self_ms": ms(max(0.0, op_self[name])), "total_ms": ms(op_total[name]),
            "calls_per_step": round(op_calls[name] / max(1, steps), 2), "shapes": op_shapes.get(name, "")}
           for name in op_total]
    ops.sort(key=lambda r: -r["self_ms"])
    functions = [{"path": key[0], "line": key[1], "function": key[2], "forward_ms": ms(acc.fwd), "backward_ms": ms(acc.bwd),
                  "total_ms": ms(acc.fwd + acc.bwd)} for key, acc in func_acc.items()]
    functions.sort(key=lambda r: -r["total_ms"])
    wall = window_us if window_us is not None else ((last_end - first_ts) if first_ts is not None else 0.0)
    other = max(0.0, wall - split["forward"] - split["backward"] - split["optimizer"])
    return {
        "steps": steps,
        "step_ms": ms(wall),
        "split_ms": {"forward": ms(max(0.0, split["forward"])), "backward": ms(max(0.0, split["backward"])),
                     "optimizer": ms(max(0.0, split["optimizer"])), "other": ms(max(0.0, other - probes_total))},
        "probes_ms": ms(probes_total),
        "lines": hot_lines[:top],
        "modules": hot_modules[:top],
        "ops": ops[:top],
        "functions": functions[:top],
    }


def _share_of(stack: list[dict], root_modules: set[str]) -> str | None:
    """The share of the step (forward, backward, optimizer) the stack's innermost range is in."""
    for e in reversed(stack):
        name = e.get("name", "")
        if e.get("cat") == "user_annotation" and name.startswith(("Optimizer.step#", "Optimizer.zero_grad#")):
            return "optimizer"
        if e.get("cat") == "cpu_op" and name.startswith(BACKWARD_PREFIX):
            return "backward"
        if e.get("cat") == "user_annotation" and name in root_modules:
            return "forward"
    return None


def _shapes(dims: list) -> str:
    shown = [str(list(d)) for d in dims if isinstance(d, list) and d]
    return "(" + ", ".join(shown[:3]) + (", ..." if len(shown) > 3 else "") + ")"
