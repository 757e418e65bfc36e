"""Eager and compiled profiles side by side, by user line, user function and fused kernel.

Plain JSON in, plain JSON out (no torch): the traces ``torch.profiler`` exported for the same
calls run eagerly and compiled, and what Inductor recorded about each compiled graph.

What ties a compiled kernel to the user's code: Inductor's provenance tracking
(``torch._inductor.config.trace.provenance_tracking_level``) emits, per compiled graph, a
JSON map ``"<kernel>:<n>" -> [stack traces of the FX nodes it fused]`` (the
``inductor_provenance_tracking_kernel_stack_traces`` artifact of the structured trace, kept in
the FX graph cache too). On the CPU, ``torch._inductor.config.cpp.enable_kernel_profile`` makes
each C++ kernel a profiler range named ``graph_<id>_<kernel>``, ``<id>`` being the number in
the graph's ``# AOT ID: ['<id>_inference']`` line; on a GPU the kernel events carry the Triton
kernel's own name. Extern kernels (``extern_kernels.addmm``, ATen fallbacks) run as ``aten::``
operations inside the graph's ``## Call CompiledFxGraph`` range.

The eager side: the replay wraps each top-level torch call in a ``tl-stack: <n>`` range, ``<n>``
indexing the user stack it was called from (see ``compiled_profile``).

Time is counted where the work is: a top-level ``aten::`` operation or a compiled kernel (on a
GPU, the device kernels, found through the launch's correlation id). A fused kernel's time is
shared among the user lines whose operations it fused, in proportion to how many of its
operations each contributed; a function gets the share of every operation called under it.
What runs between operations (Python, Dynamo's guards, the compiled wrappers) is no line's:
it is the difference between the timed call and the attributed time.
"""

from __future__ import annotations

import ast
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

STACK_PREFIX = "tl-stack: "
#: The range around each profiled call: ``tl-call: eager`` or ``tl-call: compiled``.
CALL_PREFIX = "tl-call: "
_AOT_ID = re.compile(r"#\s*AOT ID:\s*\['(?P<graph>\d+)_(?P<kind>[a-z]+)'\]")
_TRACE_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>[^\n]+)')
_FALLBACK = re.compile(r"^(?:torch\.ops\.)?(?P<ns>aten|mkldnn|mkl|quantized|onednn|prims|_c10d_functional)\.(?P<op>\w+)(?:\.\w+)?$")
#: An operation as the profiler names it: ``aten::mm``, ``mkldnn::_linear_pointwise``.
_OP = re.compile(r"^\w+::")
_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<func>.+)_at_(?P<line>\d+)$")
_PY_FRAME = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<func>.+)$")
_GRAPH_CALL = "## Call CompiledFxGraph"
_COMPILED_REGION = "Torch-Compiled Region"
_LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")

#: A user frame: (absolute path, line, function name).
Frame = tuple[str, int, str]


@dataclass
class Graph:
    """One graph Inductor compiled: its number, its files and its kernels' user stacks."""

    graph_id: int | None
    kind: str = ""
    output_code: str | None = None  # the generated Python wrapper (with the kernels' source)
    output_code_path: str | None = None  # where Inductor wrote it (its cache)
    runnable: str | None = None  # fx_graph_runnable: the graph as a standalone repro
    #: kernel name (without Inductor's ":<n>" debug handle) -> user stacks of its FX nodes
    kernels: dict[str, list[list[Frame]]] = field(default_factory=dict)

    def event_names(self) -> dict[str, str]:
        """Profiler range name -> kernel, read from the generated code: a graph from Inductor's
        cache names its ranges after the graph number of the process that compiled it."""
        names = {}
        for kernel in self.kernels:
            if extern_op(kernel) is not None:
                continue  # runs as an aten:: operation, not a range of its own
            for match in re.finditer(r'"((?:graph_\d+_)?' + re.escape(kernel) + r')"', self.output_code or ""):
                names[match.group(1)] = kernel
            names.setdefault(kernel, kernel)  # a Triton kernel's events carry its own name
        return names


def graph_id_of(output_code: str) -> tuple[int | None, str]:
    match = _AOT_ID.search(output_code or "")
    return (int(match.group("graph")), match.group("kind")) if match else (None, "")


def _resumed(frame: Frame) -> Frame:
    """Dynamo's resume function after a graph break (``torch_dynamo_resume_in_forward_at_21``)
    as the function it resumes."""
    resume = _RESUME.match(frame[2])
    return (frame[0], max(frame[1], int(resume.group("line"))), resume.group("func")) if resume else frame


def parse_stack(text: str, user_file: Callable[[str], str | None]) -> list[Frame]:
    """The user frames of a Python stack trace as FX nodes carry it (outermost first)."""
    frames = []
    for match in _TRACE_FRAME.finditer(text or ""):
        path = user_file(match.group("path"))
        if path:
            frames.append(_resumed((path, int(match.group("line")), match.group("func").strip())))
    return frames


def kernel_stacks(provenance: dict[str, list[str]], user_file: Callable[[str], str | None]) -> dict[str, list[list[Frame]]]:
    """``{"cpp_fused_add_0:2": [trace, ...]}`` -> ``{"cpp_fused_add_0": [[frame, ...], ...]}``."""
    out: dict[str, list[list[Frame]]] = {}
    for name, traces in (provenance or {}).items():
        base = _kernel_key(name)
        stacks = out.setdefault(base, [])
        for trace in traces or ():
            stack = parse_stack(trace, user_file)
            if stack:
                stacks.append(stack)
    return out


def kernel_stacks_from_nodes(mapping: dict[str, Any], node_traces: dict[str, str],
                             user_file: Callable[[str], str | None]) -> dict[str, list[list[Frame]]]:
    """Kernel -> user stacks through Inductor's node mapping (``cppCodeToPost`` / ``tritonCodeToPost``
    kernel -> post-grad nodes, ``postToPre`` -> the nodes of the graph Dynamo traced) and the
    stack traces of those nodes in this run's graph. A graph found in Inductor's cache carries the
    stack traces of the run that compiled it (another file, or the lines before an edit); its node
    names are the same as this run's."""
    post_to_pre = mapping.get("postToPre") or {}
    out: dict[str, list[list[Frame]]] = {}
    for key in ("cppCodeToPost", "tritonCodeToPost", "extern_kernels"):
        for name, posts in (mapping.get(key) or {}).items():
            stacks = out.setdefault(_kernel_key(name), [])
            for post in posts or ():
                # A node a pattern replaced several with (one attention operation for matmul,
                # softmax, matmul) stands for all of them: each one's line gets its part.
                for pre in post_to_pre.get(post, ()) or ():
                    stack = parse_stack(node_traces.get(pre, ""), user_file)
                    if stack:
                        stacks.append(stack)
    return {name: stacks for name, stacks in out.items() if stacks}


def _kernel_key(name: str) -> str:
    """A generated kernel's name without Inductor's ``:<n>`` debug handle; an extern kernel keeps
    it (``extern_kernels.addmm:1``, ``extern_kernels.addmm:3``: two calls, in the graph's order)."""
    if extern_op(name) is None and re.search(r":\d+$", name):
        return name.rsplit(":", 1)[0]
    return name


def _handle(name: str) -> int:
    match = re.search(r":(\d+)$", name)
    return int(match.group(1)) if match else 0


def extern_op(kernel: str) -> str | None:
    """The ``aten::`` operation an extern kernel or fallback runs as (``extern_kernels.addmm:1``
    -> ``aten::addmm``; ``aten.convolution.default`` or ``torch.ops.aten.convolution.default`` ->
    ``aten::convolution``, a fallback to another namespace's operation likewise)."""
    kernel = kernel.rsplit(":", 1)[0] if re.search(r":\d+$", kernel) else kernel
    if kernel.startswith("extern_kernels."):
        return "aten::" + kernel[len("extern_kernels."):].split(".")[0]
    match = _FALLBACK.match(kernel)  # torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
    return f"{match.group('ns')}::{match.group('op')}" if match else None


class SourceFunctions:
    """The function a user line is in, by its qualified name and ``def`` line, read from the
    source with ``ast``: stack traces name a frame's function by its bare name (every
    ``forward`` of a file would be one), and the profiler's Python events by its first line."""

    def __init__(self) -> None:
        self._spans: dict[str, list[tuple[int, int, str, str, int]]] = {}

    def __call__(self, path: str, line: int, name: str) -> tuple[str, int | None]:
        best = None
        for start, end, short, qualname, def_line in self._of(path):
            if start <= line <= end and short == name and (best is None or start >= best[0]):
                best = (start, qualname, def_line)
        return (best[1], best[2]) if best else (name, None)

    def _of(self, path: str) -> list[tuple[int, int, str, str, int]]:
        spans = self._spans.get(path)
        if spans is None:
            spans = self._spans[path] = []
            try:
                with open(path, encoding="utf-8") as handle:
                    tree = ast.parse(handle.read())
            except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
                return spans

            def visit(node: ast.AST, prefix: str) -> None:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                        short = "<lambda>" if isinstance(child, ast.Lambda) else child.name
                        decorators = getattr(child, "decorator_list", [])
                        start = min([child.lineno] + [d.lineno for d in decorators])
                        spans.append((start, child.end_lineno or child.lineno, short, prefix + short, child.lineno))
                        visit(child, f"{prefix}{short}.")
                    elif isinstance(child, ast.ClassDef):
                        visit(child, f"{prefix}{child.name}.")
                    else:
                        visit(child, prefix)

            visit(tree, "")
        return spans


class _Acc:
    """Time per key (line or function) in µs over the profiled calls. A function is keyed by
    its path and qualified name (``function_of``)."""

    def __init__(self, function_of: Callable[[str, int, str], tuple[str, int | None]] | None = None) -> None:
        self._function_of = function_of
        self.lines: dict[Frame | tuple, float] = defaultdict(float)
        self.functions: dict[tuple[str, str], float] = defaultdict(float)
        self.first_line: dict[tuple[str, str], int] = {}
        #: compiled regions' time outside their operations, per function (in neither ``functions`` nor ``total``)
        self.overhead: dict[tuple[str, str], float] = defaultdict(float)
        #: function -> the functions it called on the way to an operation
        self.callees: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
        self.line_function: dict[tuple[str, int], str] = {}
        #: the part of a line's or function's time that is its estimated share of a kernel it
        #: shares with other lines or functions (split by how many operations each gave it)
        self.shared: dict[tuple, float] = defaultdict(float)
        #: functions with time known only at function level (eager code between compiled graphs)
        self.eager_pieces: set[tuple[str, str]] = set()
        self.total = 0.0

    def _named(self, frames: list[Frame]) -> list[Frame]:
        """Frames with their function's qualified name, the line kept (the def line noted)."""
        if self._function_of is None:
            return frames
        out = []
        for path, line, func in frames:
            qualname, def_line = self._function_of(path, line, func)
            if def_line is not None:
                self.first_line[(path, qualname)] = def_line
            out.append((path, line, qualname))
        return out

    def _calls(self, frames: list[Frame]) -> None:
        for outer, inner in zip(frames, frames[1:]):
            if (outer[0], outer[2]) != (inner[0], inner[2]):
                self.callees[(outer[0], outer[2])].add((inner[0], inner[2]))

    def add(self, dur: float, stacks: list[list[Frame]]) -> None:
        """``dur`` shared among ``stacks`` (each an operation's user stack)."""
        self.total += dur
        stacks = [s for s in stacks if s]
        if not stacks:
            return
        share = dur / len(stacks)
        stacks = [self._named(stack) for stack in stacks]
        mixed_lines = len({stack[-1][:2] for stack in stacks}) > 1
        seen_functions: dict[tuple[str, str], float] = defaultdict(float)
        for stack in stacks:
            path, line, func = stack[-1]
            self.lines[(path, line)] += share
            if mixed_lines:  # a kernel fusing several lines' operations: the split is an estimate
                self.shared[(path, line)] += share
            self.line_function[(path, line)] = func
            self._calls(stack)
            for frame_path, frame_line, frame_func in {(p, f): (p, l, f) for p, l, f in stack}.values():
                key = (frame_path, frame_func)
                seen_functions[key] += share
                self.first_line.setdefault(key, frame_line)
        for key, value in seen_functions.items():
            self.functions[key] += value
            if value < dur * (1 - 1e-9):  # fused with another function's operations
                self.shared[key] += value

    def add_overhead(self, dur: float, functions: list[Frame]) -> None:
        """A compiled region's time outside kernels and operations (guards, the graph's Python
        wrapper, eager code between graphs): its functions', kept apart from their operations'
        time, as the eager side's Python between operations is not counted either."""
        functions = self._named(functions)
        self._calls(functions)
        for path, line, func in {(p, f): (p, l, f) for p, l, f in functions}.values():
            key = (path, func)
            self.overhead[key] += dur
            self.first_line.setdefault(key, line)

    def add_function_only(self, dur: float, functions: list[tuple[str, int, str]], between_graphs: bool = True) -> None:
        """Time known by its Python callers only (an eager piece between compiled graphs)."""
        self.total += dur
        functions = self._named(functions)
        self._calls(functions)
        if functions and between_graphs:
            self.eager_pieces.add((functions[-1][0], functions[-1][2]))
        for path, line, func in {(p, f): (p, l, f) for p, l, f in functions}.values():
            key = (path, func)
            self.functions[key] += dur
            self.first_line.setdefault(key, line)


@dataclass
class RunProfile:
    """One run's attributed time (µs over all profiled calls)."""

    acc: _Acc
    kernels: dict[str, dict[str, Any]]
    device: str  # "cpu" or "cuda": whose clock the times are
    unattributed: float = 0.0  # operations with no user stack (library code, wrappers)
    #: top-level operations, kernels and compiled regions counted
    events: int = 0


def _by_thread(events: Iterable[dict]) -> dict[Any, list[dict]]:
    out: dict[Any, list[dict]] = defaultdict(list)
    for event in events:
        if event.get("ph") == "X" and "dur" in event:
            out[(event.get("pid"), event.get("tid"))].append(event)
    for thread in out.values():
        thread.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
    return out


def _is_device(events: list[dict]) -> bool:
    return any(e.get("cat") == "kernel" for e in events)


def attribute(events: list[dict], *, stacks: dict[int, list[Frame]] | None = None, graphs: list[Graph] = (),
              user_file: Callable[[str], str | None] = lambda path: None,
              function_of: Callable[[str, int, str], tuple[str, int | None]] | None = None) -> RunProfile:
    """Attribute one run's trace: ``stacks`` for an eager run (the replay's ``tl-stack`` ranges),
    ``graphs`` for a compiled one."""
    stacks = stacks or {}
    by_event: dict[str, list[tuple[Graph, str]]] = defaultdict(list)
    for graph in graphs:
        for event_name, kernel in graph.event_names().items():
            by_event[event_name].append((graph, kernel))
    device = "cuda" if _is_device(events) else "cpu"
    acc = _Acc(function_of)
    kernels: dict[str, dict[str, Any]] = {}
    unattributed = 0.0
    #: correlation id of a kernel launch -> how its kernel is attributed (device runs)
    launches: dict[Any, tuple[str, Any]] = {}
    py_cache: dict[str, Frame | None] = {}

    def py_frame(name: str) -> Frame | None:
        if name not in py_cache:
            match = _PY_FRAME.match(name)
            path = user_file(match.group("file")) if match else None
            py_cache[name] = _resumed((path, int(match.group("line")), match.group("func"))) if path else None
        return py_cache[name]

    def compiled_kernel(name: str, stack: list[dict] = ()) -> tuple[Graph, str] | None:
        candidates = by_event.get(name)
        if not candidates:
            return None
        if len(candidates) > 1:  # the same name in two graphs: the one whose wrapper is running
            wrapper = running_wrapper(stack)
            return next((c for c in candidates if c[0] is wrapper), candidates[0])
        return candidates[0]

    def note_kernel(graph: Graph, name: str, dur: float) -> None:
        label = graphs.index(graph) if graph in graphs else None
        entry = kernels.setdefault(f"{label}:{name}", {"name": name, "graph": label, "us": 0.0, "calls": 0})
        entry["us"] += dur
        entry["calls"] += 1

    by_file = {os.path.basename(g.output_code_path): g for g in graphs if g.output_code_path}

    def running_wrapper(stack: list[dict]) -> Graph | None:
        """The graph whose generated wrapper is on the stack (its ``call`` as a Python frame)."""
        for e in reversed(stack):
            match = _PY_FRAME.match(e.get("name", "")) if e.get("cat") == "python_function" else None
            if match and os.path.basename(match.group("file")) in by_file:
                return by_file[os.path.basename(match.group("file"))]
        return None

    def extern_stacks(stack: list[dict], op: str) -> list[list[Frame]] | None:
        """An operation a compiled graph runs itself: that graph's extern kernels of the same op."""
        call = next((e for e in reversed(stack) if e.get("name", "").startswith(_GRAPH_CALL)), None)
        if call is None:
            return None
        # The n-th `op` this graph call runs is its n-th extern kernel of that op (in handle order).
        seen = call.setdefault("_tl_seen", defaultdict(int))
        nth = seen[op]
        seen[op] += 1
        wrapper = running_wrapper(stack)
        for graph in [wrapper] if wrapper is not None else graphs:
            externs = sorted((name for name in graph.kernels if extern_op(name) == op), key=_handle)
            if externs:
                return graph.kernels[externs[min(nth, len(externs) - 1)]]
        return []

    def context(stack: list[dict], op_name: str) -> tuple[str, Any]:
        """How an operation inside ``stack`` is attributed: ("stacks", [...]), ("functions", [...]) or ("none", None)."""
        for e in reversed(stack):
            name = e.get("name", "")
            if name.startswith(STACK_PREFIX):
                user = stacks.get(int(name[len(STACK_PREFIX):]))
                return ("stacks", [user]) if user else ("none", None)
        found = extern_stacks(stack, op_name)
        if found:
            return "stacks", found
        functions = [f for f in (py_frame(e["name"]) for e in stack if e.get("cat") == "python_function") if f]
        if not functions:
            return "none", None
        # Inside a graph's call but no extern kernel of its name: a fallback the graph runs
        # (not code between graphs); its function is known, its line is not.
        return ("graph functions" if found is not None else "functions"), functions

    counted = 0

    def credit(how: tuple[str, Any], dur: float) -> None:
        nonlocal unattributed, counted
        counted += 1
        kind, value = how
        if kind == "stacks":
            acc.add(dur, value)
        elif kind in ("functions", "graph functions"):
            acc.add_function_only(dur, value, between_graphs=kind == "functions")
        else:
            acc.total += dur
            unattributed += dur

    def python_frames(stack: list[dict]) -> list[Frame]:
        return [f for f in (py_frame(e["name"]) for e in stack if e.get("cat") == "python_function") if f]

    def with_callers(stacks_: list[list[Frame]], callers: list[Frame]) -> list[list[Frame]]:
        """A compiled graph's stacks start at the frame Dynamo compiled: its Python callers
        (a loop that calls it, outside the graph) come first."""
        out = []
        for user_stack in stacks_:
            head = (user_stack[0][0], user_stack[0][2]) if user_stack else None
            cut = next((i for i, f in enumerate(callers) if (f[0], f[2]) == head), len(callers))
            out.append(callers[:cut] + user_stack)
        return out

    regions: list[dict] = []
    for thread in _by_thread(events).values():
        stack: list[dict] = []
        for event in thread:
            ts = float(event["ts"])
            while stack and float(stack[-1]["ts"]) + float(stack[-1]["dur"]) <= ts:
                stack.pop()
            cat, name = event.get("cat"), event.get("name", "")
            dur = float(event.get("_tl_dur", event["dur"]))  # a bare session's duration, when known
            if cat == "kernel":
                stack.append(event)
                continue  # device kernels: below, by correlation
            inside_work = any(e.get("cat") == "cpu_op" and (_OP.match(e.get("name", "")) or e.get("_tl_kernel"))
                              for e in stack)
            work = 0.0
            if cat in _LAUNCH_CATEGORIES:
                correlation = (event.get("args") or {}).get("correlation")
                if correlation is not None:
                    owner = next((e for e in reversed(stack) if e.get("_tl_how")), None)
                    launches[correlation] = (owner["_tl_how"] if owner is not None else ("none", None), python_frames(stack))
            elif cat == "cpu_op" and name.startswith(_COMPILED_REGION) and not inside_work:
                event["_tl_work"] = 0.0
                event["_tl_callers"] = python_frames(stack)
                regions.append(event)
            elif cat == "python_function" and not inside_work:
                region = next((e for e in reversed(stack) if "_tl_work" in e), None)
                if region is not None and "_tl_frame" not in region and py_frame(name):
                    region["_tl_frame"] = py_frame(name)  # the frame Dynamo compiled
            elif cat == "cpu_op" and not inside_work:
                found = compiled_kernel(name, stack)
                if found is not None:
                    graph, kernel = found
                    event["_tl_kernel"] = True
                    how = ("stacks", with_callers(graph.kernels[kernel], python_frames(stack)))
                    event["_tl_how"] = how
                    if device == "cpu":
                        note_kernel(graph, kernel, dur)
                        credit(how, dur)
                        work = dur
                elif _OP.match(name):  # aten::, mkldnn::, ...: an operation
                    how = context(stack, name)
                    if how[0] == "stacks" and not any(e.get("name", "").startswith(STACK_PREFIX) for e in stack):
                        how = ("stacks", with_callers(how[1], python_frames(stack)))
                    event["_tl_how"] = how
                    if device == "cpu":
                        credit(how, dur)
                        work = dur
            if work:
                for region in (e for e in stack if "_tl_work" in e):
                    region["_tl_work"] += work
            stack.append(event)

    if device == "cuda":
        for event in events:
            if event.get("cat") != "kernel" or event.get("ph") != "X":
                continue
            dur = float(event["dur"])
            how, callers = launches.get((event.get("args") or {}).get("correlation"), (("none", None), []))
            found = compiled_kernel(event.get("name", ""))
            if found is not None:  # a Triton kernel Inductor generated: its name says which
                graph, kernel = found
                note_kernel(graph, kernel, dur)
                how = ("stacks", with_callers(graph.kernels[kernel], callers))
            credit(how, dur)
    else:
        # What a compiled region spent outside its kernels and operations (guards, the graph's
        # wrappers, Python between graphs) is its function's, and its callers'.
        for region in regions:
            counted += 1
            overhead = float(region.get("_tl_dur", region["dur"])) - region["_tl_work"]
            frames = region["_tl_callers"] + ([region["_tl_frame"]] if region.get("_tl_frame") else [])
            if overhead > 0 and frames:
                acc.add_overhead(overhead, frames)
    return RunProfile(acc, kernels, device, unattributed, counted)


def split_calls(events: list[dict]) -> dict[str, list[list[dict]]]:
    """The trace of one profiling session in which eager and compiled calls alternate (so that a
    busy machine slows both alike): each call's events, by the ``tl-call`` range around it. A
    device kernel goes with the call that launched it (its correlation id)."""
    calls = sorted((e for e in events if e.get("name", "").startswith(CALL_PREFIX)), key=lambda e: float(e["ts"]))
    out: dict[str, list[list[dict]]] = {}
    buckets = []
    for call_event in calls:
        bucket: list[dict] = [call_event]
        out.setdefault(call_event["name"][len(CALL_PREFIX):], []).append(bucket)
        buckets.append((float(call_event["ts"]), float(call_event["ts"]) + float(call_event["dur"]),
                        (call_event.get("pid"), call_event.get("tid")), bucket))
    owner_of: dict[Any, list[dict]] = {}
    kernels = []
    for event in events:
        if event.get("name", "").startswith(CALL_PREFIX):
            continue
        if event.get("cat") == "kernel":
            kernels.append(event)
            continue
        ts, thread = float(event["ts"]), (event.get("pid"), event.get("tid"))
        for start, end, call_thread, bucket in buckets:
            if start <= ts < end and thread == call_thread:
                bucket.append(event)
                correlation = (event.get("args") or {}).get("correlation")
                if event.get("cat") in _LAUNCH_CATEGORIES and correlation is not None:
                    owner_of[correlation] = bucket
                break
    for kernel in kernels:
        bucket = owner_of.get((kernel.get("args") or {}).get("correlation"))
        if bucket is not None:
            bucket.append(kernel)
    return out


_WORK = re.compile(r"^(\w+::|graph_\d+_|cpp_)")


def _work(call: list[dict]) -> list[dict]:
    """A call's top-level operations and CPU kernels, in order."""
    out: list[dict] = []
    end = -1.0
    for event in sorted((e for e in call if e.get("cat") == "cpu_op" and _WORK.match(e.get("name", ""))),
                        key=lambda e: (float(e["ts"]), -float(e["dur"]))):
        if float(event["ts"]) >= end:
            out.append(event)
            end = float(event["ts"]) + float(event["dur"])
    return out


def transfer_durations(plain: list[list[dict]], annotated: list[list[dict]]) -> bool:
    """Give the annotated calls' operations (and compiled regions) the durations they had in
    calls profiled without annotations (no Python frames, no stack ranges: what the profiler adds between operations
    also slows them), matched by position; per position the median over the plain calls. False,
    and nothing changed, when the calls did not run the same operations."""
    def positions(call: list[dict]) -> list[dict]:
        # A compiled region's length too: what it spends outside its work is its overhead.
        return _work(call) + sorted((e for e in call if e.get("name", "").startswith(_COMPILED_REGION)),
                                    key=lambda e: float(e["ts"]))

    plain_work = [positions(call) for call in plain]
    names = [[e["name"] for e in work] for work in plain_work]
    if not names or any(n != names[0] for n in names):
        return False
    annotated_work = [positions(call) for call in annotated]
    if any([e["name"] for e in work] != names[0] for work in annotated_work):
        return False
    medians = [sorted(float(work[i]["dur"]) for work in plain_work)[len(plain_work) // 2] for i in range(len(names[0]))]
    for work in annotated_work:
        for event, dur in zip(work, medians):
            event["_tl_dur"] = dur  # "dur" stays: it says what the event contains
    return True


def median_profile(profiles: list[RunProfile]) -> RunProfile:
    """Per key, the median over calls of its time in each call: one slow call (the machine was
    busy) moves nothing."""
    def median(values: list[float], n: int) -> float:
        values = sorted(values + [0.0] * (n - len(values)))
        middle = len(values) // 2
        return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2

    n = len(profiles)
    acc = _Acc()
    for attr in ("lines", "functions", "overhead", "shared"):
        keys = {k for p in profiles for k in getattr(p.acc, attr)}
        for key in keys:
            getattr(acc, attr)[key] = median([getattr(p.acc, attr)[key] for p in profiles if key in getattr(p.acc, attr)], n)
    for p in profiles:
        for key, line in p.acc.first_line.items():
            acc.first_line[key] = min(acc.first_line.get(key, line), line)
        for key, callees in p.acc.callees.items():
            acc.callees[key] |= callees
        acc.line_function.update(p.acc.line_function)
        acc.eager_pieces |= p.acc.eager_pieces
    acc.total = median([p.acc.total for p in profiles], n)
    kernels: dict[str, dict[str, Any]] = {}
    for name in {k for p in profiles for k in p.kernels}:
        entries = [p.kernels[name] for p in profiles if name in p.kernels]
        kernels[name] = {"name": entries[0]["name"], "graph": entries[0]["graph"], "us": median([e["us"] for e in entries], n),
                         "calls": median([float(e["calls"]) for e in entries], n)}
    device = profiles[0].device if profiles else "cpu"
    return RunProfile(acc, kernels, device, median([p.unattributed for p in profiles], n),
                      int(median([float(p.events) for p in profiles], n)))


# -- the comparison ---------------------------------------------------------------------------------

def _ratio(eager: float, compiled: float) -> float | None:
    return round(eager / compiled, 3) if compiled > 0 and eager > 0 else None


def compare(eager: RunProfile, compiled: RunProfile, *, eager_ms: float, compiled_ms: float, eager_scale: float = 1.0,
            compiled_scale: float = 1.0, top: int = 15) -> dict[str, Any]:
    """Per-call milliseconds of each line, function and kernel, eager next to compiled (each
    profile the median over calls, times its side's scale: what turns profiled time into timed
    time), and the timed calls."""
    def ms(value: float, scale: float = 1.0) -> float:
        return round(value * scale / 1000.0, 4)

    scale_e, scale_c = eager_scale, compiled_scale

    lines = []
    for key in set(eager.acc.lines) | set(compiled.acc.lines):
        e, c = ms(eager.acc.lines.get(key, 0.0), scale_e), ms(compiled.acc.lines.get(key, 0.0), scale_c)
        function = compiled.acc.line_function.get(key) or eager.acc.line_function.get(key, "")
        row = {"path": key[0], "line": key[1], "function": function, "eager_ms": e, "compiled_ms": c, "speedup": _ratio(e, c),
               "compiled_shared_ms": ms(compiled.acc.shared.get(key, 0.0), scale_c)}
        if key not in compiled.acc.lines and (key[0], function) in compiled.acc.eager_pieces:
            # Run eagerly between graphs: the compiled trace knows its function, not its line.
            row.update(compiled_ms=None, speedup=None, compiled_as="eager code between graphs")
        lines.append(row)
    lines.sort(key=lambda r: (-max(r["eager_ms"], r["compiled_ms"] or 0.0), r["path"], r["line"]))
    functions = []
    for key in set(eager.acc.functions) | set(compiled.acc.functions):
        e, c = ms(eager.acc.functions.get(key, 0.0), scale_e), ms(compiled.acc.functions.get(key, 0.0), scale_c)
        line = min(x for x in (eager.acc.first_line.get(key), compiled.acc.first_line.get(key)) if x is not None)
        functions.append({"path": key[0], "function": key[1], "line": line, "eager_ms": e, "compiled_ms": c,
                          "compiled_outside_kernels_ms": ms(compiled.acc.overhead.get(key, 0.0), scale_c),
                          "compiled_shared_ms": ms(compiled.acc.shared.get(key, 0.0), scale_c),
                          "speedup": _ratio(e, c),
                          "calls": sorted([p, f] for p, f in eager.acc.callees.get(key, set()) | compiled.acc.callees.get(key, set()))})
    functions.sort(key=lambda r: (-max(r["eager_ms"], r["compiled_ms"]), r["path"], r["line"]))
    kernel_total = sum(k["us"] for k in compiled.kernels.values()) or 1.0
    kernels = [{"name": entry["name"], "graph": entry["graph"], "ms": ms(entry["us"], scale_c),
                "calls_per_call": round(entry["calls"], 2), "share": round(entry["us"] / kernel_total, 4),
                "share_of_call": round(entry["us"] * scale_c / 1000.0 / compiled_ms, 4) if compiled_ms else None}
               for entry in sorted(compiled.kernels.values(), key=lambda k: -k["us"])]
    attributed = {"eager": ms(eager.acc.total, scale_e), "compiled": ms(compiled.acc.total, scale_c)}
    return {
        "eager_ms": round(eager_ms, 4), "compiled_ms": round(compiled_ms, 4), "speedup": _ratio(eager_ms, compiled_ms),
        "device": compiled.device,
        "attributed_ms": attributed,
        # What the timed call spent outside operations and kernels: Python, dispatch, guards, wrappers.
        "outside_ms": {"eager": round(max(0.0, eager_ms - attributed["eager"]), 4),
                       "compiled": round(max(0.0, compiled_ms - attributed["compiled"]), 4)},
        "lines": lines[:top],
        "functions": functions[:top],
        "kernels": kernels[:top],
        "kernel_count": len(compiled.kernels),
    }


def kernel_lines(graphs: list[Graph], name: str, index: int | None) -> list[dict[str, Any]]:
    """The user lines whose operations a kernel fused, with how many of its operations each."""
    graph = graphs[index] if index is not None and 0 <= index < len(graphs) else None
    graph = graph if graph is not None and name in graph.kernels else next((g for g in graphs if name in g.kernels), None)
    counts: dict[tuple[str, int], int] = defaultdict(int)
    for stack in graph.kernels.get(name, []) if graph else []:
        counts[stack[-1][:2]] += 1
    return [{"path": path, "line": line, "ops": n} for (path, line), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def slower_regions(comparison: dict[str, Any], *, min_ratio: float = 1.25, min_share: float = 0.05,
                   min_ms: float = 0.02, most: int = 3) -> list[dict[str, Any]]:
    """Lines and functions that took at least ``min_ratio`` times their eager time compiled, by at
    least ``min_share`` of the eager call and ``min_ms``: differences smaller than that are noise
    on a busy machine. A function is named only when none it calls is slower too (a loop around
    a slow function is not another place to look), and a line or function only when most of its
    compiled time is its own (not its estimated share of a kernel fused with other code)."""
    floor = max(min_ms, min_share * comparison["eager_ms"])

    def slower(row: dict[str, Any]) -> bool:
        e, c = row["eager_ms"], row["compiled_ms"]
        # Most of it an estimated share of a kernel fused with other code: not a place to name.
        estimated = (row.get("compiled_shared_ms") or 0.0) > 0.5 * (c or 0.0)
        return c is not None and e > 0 and c >= min_ratio * e and c - e >= floor and not estimated

    lines = [dict(row, kind="line") for row in comparison["lines"] if slower(row)]
    functions = [row for row in comparison["functions"] if slower(row)]
    slow_keys = {(row["path"], row["function"]) for row in functions}
    innermost = [dict(row, kind="function") for row in functions
                 if not any(tuple(callee) in slow_keys for callee in row.get("calls", ()))]

    def cost(row: dict[str, Any]) -> float:
        return -(row["compiled_ms"] - row["eager_ms"])

    return sorted(innermost, key=cost)[:most] + sorted(lines, key=cost)[:most]
