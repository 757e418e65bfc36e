"""Profile probe (``torchlint run --profile``): hot paths by user line and module, FLOPs, TL712.

The program's own training loop is profiled: after ``warmup`` steps (optimizer steps, or
forward calls of the outermost module when there is no optimizer) ``torch.profiler`` runs
for ``profile_steps`` steps. While it runs, the probe wraps each torch call a user line
makes in a ``line: file.py:N`` range and each submodule's forward in a
``module: encoder.layers.3.attn`` range; ``torchlint.runtime.profile_trace`` attributes the
trace's operations to them (backward through sequence numbers) and to the user's
``python_function`` frames. FLOPs per module come from ``FlopCounterMode`` over the first
forward call, which also works under ``--device fake-cuda`` (not timed: its clock is the CPU's)
and ``meta`` (no values computed).
"""

from __future__ import annotations

import linecache
import os
import sys
import tempfile
import time
from typing import Any

import torch
from torch.nn.modules import module as module_hooks
from torch.optim import optimizer as optimizer_hooks

from torchlint.probe import (
    LINE_PREFIX, MODULE_PREFIX, USER, ModelCapture, Probe, analyse, load_events, on_optimizer_created,
)

HOT_SPOT_SHARE = 0.3

try:  # a range in the trace without a dispatcher call (~1 µs); record_function is an op itself
    from torch._C._profiler import _RecordFunctionFast as _Range
except ImportError:  # older torch
    from torch.autograd.profiler import record_function as _Range


class _ModuleStack:
    """Stands in for FlopCounterMode's ModuleTracker: our dotted module paths, not class names."""

    def __init__(self) -> None:
        self.stack: list[str] = []

    @property
    def parents(self) -> set[str]:
        return {"Global", *self.stack}

    def __enter__(self) -> _ModuleStack:
        return self

    def __exit__(self, *args: Any) -> None:
        return None


class ProfileProbe(Probe):
    name = "profile"
    order = 90
    confirms = ()
    runtime_code = "TL712"
    summary = "hot paths by user line and module (torch.profiler), FLOPs per module"

    #: The optimizer's update is part of the `optimizer.step()` line's time.
    inside_optimizer_step = True

    @classmethod
    def wanted(cls, options: dict) -> bool:
        return bool(options.get("profile"))

    def keeps_watching(self, steps: int) -> bool:
        # Until the profiled steps are over, whatever the run's watch window.
        if not self.timing or self.error:
            return super().keeps_watching(steps)
        return self.profiler is None or self._annotating

    def install(self) -> None:
        options = self.ctx.options
        self.warmup = int(options.get("profile_warmup", 1))
        self.active_steps = int(options.get("profile_steps", 5))
        self.with_stack = bool(options.get("profile_stack", True))
        self._probe_places: tuple[str, tuple[str, ...], set[str]] | None = None  # see _probe_file
        # Under fake-cuda the clock would time the CPU standing in for a GPU: FLOPs only.
        self.timing = self.ctx.device.computes_values and getattr(self.ctx.device, "times_are_real", True)
        self.capture = ModelCapture(max_signatures=1, clone_inputs=False)
        self.capture.install()
        self.names: dict[int, str] = {}  # id(module) -> module annotation name
        self.module_paths: dict[str, str] = {}  # annotation name -> dotted path ("" for the model)
        self.line_info: dict[str, dict[str, Any]] = {}
        self._line_names: dict[tuple[str, int], str] = {}
        self.ticks = 0
        self.optimizer_seen = False
        self.profiler: Any = None
        self.profiled_steps = 0
        self.window_s = 0.0
        self._window_start = 0.0
        self._annotating = False
        self._ranges: list[Any] = []
        self._line_ranges: list[Any] = []
        self.flops: Any = None
        self._flop_stack = _ModuleStack()
        self._flop_state = "pending"  # pending -> counting -> done
        self.flop_seconds = 0.0
        self.error: str | None = None
        # A step is an optimizer step once an optimizer exists, else a forward call of the
        # model, as --steps counts.
        self._restore_optimizer_init = on_optimizer_created(self.guarded(self._note_optimizer))
        self._handles = [
            module_hooks.register_module_forward_pre_hook(self.guarded(self._pre)),
            module_hooks.register_module_forward_hook(self.guarded(self._post), always_call=True),
            optimizer_hooks.register_optimizer_step_post_hook(self.guarded(self._after_step)),
        ]

    def uninstall(self) -> None:
        self._restore_optimizer_init()
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self.capture.uninstall()
        if self._flop_state == "counting":  # the first forward never returned: its counts so far
            self._stop_flops()
        if self.profiler is not None and self._annotating:
            self._stop_profiler()

    # -- module hooks -----------------------------------------------------------------------
    def _name_modules(self, root: torch.nn.Module) -> None:
        root_name = f"{MODULE_PREFIX}{type(root).__name__}"
        for path, module in root.named_modules():
            name = f"{MODULE_PREFIX}{path}" if path else root_name
            self.names.setdefault(id(module), name)
            self.module_paths.setdefault(name, path)

    def _pre(self, module: Any, args: Any) -> None:
        if self.capture.model is not None and not self.names:
            self._name_modules(self.capture.root)
        name = self.names.get(id(module))
        if name is None:
            return
        if module is self.capture.model:
            if self._flop_state == "pending":
                self._start_flops()
        if self._flop_state == "counting":
            self._flop_stack.stack.append(self.module_paths[name])
        if self._annotating:
            handle = _Range(name)
            handle.__enter__()
            self._ranges.append((id(module), handle))

    def _post(self, module: Any, args: Any, output: Any) -> None:
        name = self.names.get(id(module))
        if name is None:
            return
        if self._flop_state == "counting" and self._flop_stack.stack:
            self._flop_stack.stack.pop()
        if self._ranges and self._ranges[-1][0] == id(module):
            self._ranges.pop()[1].__exit__(None, None, None)
        if module is self.capture.model:
            if self._flop_state == "counting" and not self._flop_stack.stack:
                self._stop_flops()
            if not self.optimizer_seen:
                self._tick()

    def _note_optimizer(self) -> None:
        self.optimizer_seen = True

    def _after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.optimizer_seen = True
        self._tick()

    # -- the profiling window -----------------------------------------------------------------
    def _tick(self) -> None:
        if not self.timing or self.error:
            return
        self.ticks += 1
        if self.profiler is None and self.ticks == self.warmup:
            self._start_profiler()
        elif self._annotating:
            self.profiled_steps += 1
            if self.profiled_steps >= self.active_steps:
                self._stop_profiler()

    def _start_profiler(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        try:
            self.profiler = profile(activities=activities, record_shapes=True, with_stack=self.with_stack)
            self.profiler.start()
        except Exception as exc:
            self.error = f"torch.profiler could not start: {type(exc).__name__}: {exc}"
            self.profiler = None
            return
        self.ctx.progress(f"profile: profiling {self.active_steps} steps")
        self._annotating = True
        self._window_start = time.perf_counter()

    def _stop_profiler(self) -> None:
        self._annotating = False
        while self._line_ranges:
            self._line_ranges.pop().__exit__(None, None, None)
        while self._ranges:
            self._ranges.pop()[1].__exit__(None, None, None)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        self.window_s = time.perf_counter() - self._window_start
        try:
            self.profiler.stop()
        except Exception as exc:
            self.error = f"torch.profiler could not stop: {type(exc).__name__}: {exc}"

    # -- lines: one range per torch call a user line makes while profiling ----------------------
    def watches(self, func: Any) -> bool:
        return self.timing

    def before(self, func: Any, args: tuple, kwargs: dict) -> None:
        if not self._annotating:
            return
        site = self.ctx.site()
        if site is None:
            self._line_ranges.append(None)
            return
        key = (site.path, site.line)
        name = self._line_names.get(key)
        if name is None:
            name = f"{LINE_PREFIX}{os.path.basename(site.path)}:{site.line}"
            if name in self.line_info and self.line_info[name]["path"] != site.path:
                name = f"{LINE_PREFIX}{site.path}:{site.line}"
            self._line_names[key] = name
            self.line_info[name] = {"path": site.path, "line": site.line, "function": site.function,
                                    "source": linecache.getline(site.path, site.line).strip()}
        handle = _Range(name)
        handle.__enter__()
        self._line_ranges.append(handle)

    def after(self, func: Any, args: tuple, kwargs: dict, result: Any) -> None:
        if self._line_ranges:
            handle = self._line_ranges.pop()
            if handle is not None:
                handle.__exit__(None, None, None)

    def failed(self, func: Any, args: tuple, kwargs: dict, exc: BaseException) -> None:
        self.after(func, args, kwargs, None)

    # -- FLOPs --------------------------------------------------------------------------------
    def _start_flops(self) -> None:
        from torch.utils.flop_counter import FlopCounterMode

        try:
            counter = FlopCounterMode(display=False)
            counter.mod_tracker = self._flop_stack
            started = time.perf_counter()
            counter.__enter__()
            self.flop_seconds -= time.perf_counter() - started
            self.flops = counter
            self._flop_state = "counting"
        except Exception as exc:
            self._flop_state = "done"
            self.error = f"FlopCounterMode failed: {type(exc).__name__}: {exc}"

    def _stop_flops(self) -> None:
        self._flop_state = "done"
        self._flop_stack.stack.clear()
        try:
            self.flops.__exit__(None, None, None)
        except Exception as exc:
            self.error = f"FlopCounterMode failed: {type(exc).__name__}: {exc}"

    def _flop_table(self) -> list[dict[str, Any]]:
        if self.flops is None:
            return []
        counts = self.flops.get_flop_counts()
        rows = []
        for path, per_op in counts.items():
            if path == "Global":
                continue
            total = sum(per_op.values())
            if total:
                top_ops = sorted(per_op.items(), key=lambda kv: -kv[1])[:3]
                rows.append({"path": path or f"({self.capture.root.__class__.__name__})", "flops": int(total), "ops": [str(op).replace("aten.", "") for op, _ in top_ops]})
        rows.sort(key=lambda r: (-r["flops"], r["path"]))
        return rows

    # -- after the run ------------------------------------------------------------------------
    def _user_file(self, name: str) -> str | None:
        """A python_function file name (relative to a sys.path entry) as an absolute user path."""
        candidates = [name] if os.path.isabs(name) else [os.path.join(p or os.getcwd(), name) for p in sys.path]
        for candidate in candidates:
            if os.path.isfile(candidate) and self.ctx.frames.verdict(candidate) == USER:
                return os.path.abspath(candidate)
        return None

    def _probe_file(self, name: str) -> bool:
        """Whether a python_function file name is another probe's code: the built-in probes'
        package, or the module of a third party's probe class (its own file only: it may sit
        among the user's). Not this probe's: the tracer has the frames that open its ranges
        (``before``) enclose the operation they annotate."""
        if self._probe_places is None:
            import torchlint.plugins.probes as builtin

            own = os.path.join(os.path.dirname(os.path.realpath(__file__)), "")
            folders = tuple(os.path.join(os.path.realpath(path), "") for path in builtin.__path__)
            files = set()
            classes = list(Probe.__subclasses__())
            while classes:
                cls = classes.pop()
                classes.extend(cls.__subclasses__())
                module_file = getattr(sys.modules.get(cls.__module__), "__file__", None)
                if module_file and not os.path.realpath(module_file).startswith(folders):
                    files.add(os.path.realpath(module_file))
            self._probe_places = (own, folders, files)
        own, folders, files = self._probe_places
        candidates = [name] if os.path.isabs(name) else [os.path.join(p or os.getcwd(), name) for p in sys.path]
        for candidate in candidates:
            real = os.path.realpath(candidate)
            if (real.startswith(folders) and not real.startswith(own)) or real in files:
                return True
        return False

    def after_run(self) -> None:
        result: dict[str, Any] = {"device": self.ctx.device.name, "warmup": self.warmup}
        root = self.capture.root
        result["model"] = type(root).__name__ if root is not None else None
        flops = self._flop_table()
        if flops:
            total = self.flops.get_total_flops()
            result["flops"] = {"forward_total": int(total), "modules": flops[:40],
                               "note": "forward pass of the first call; backward is about 2x"}
        if self.error:
            result["error"] = self.error
        if not self.timing:
            why = "computes no values" if not self.ctx.device.computes_values else "runs on the CPU, not a GPU"
            result["skipped"] = f"--device {self.ctx.device.name} {why}: FLOPs only, no timings"
        elif self.profiler is None or self.profiled_steps == 0:
            result["skipped"] = (f"the program made {self.ticks} step(s); profiling starts after {self.warmup} warm-up step(s) "
                                 f"(optimizer steps, or forward calls without an optimizer)")
            if self.profiler is not None:
                with _quiet():
                    self.profiler.stop() if self._annotating else None
        else:
            result.update(self._analyse())
        self._report(result)
        self.ctx.publish(self, result)

    def _analyse(self) -> dict[str, Any]:
        report_dir = self.ctx.options.get("report_dir")
        if report_dir:
            os.makedirs(report_dir, exist_ok=True)
            trace_path = os.path.join(report_dir, "trace.json")
            keep = True
        else:
            handle, trace_path = tempfile.mkstemp(prefix="torchlint-trace-", suffix=".json")
            os.close(handle)
            keep = False
        started = time.perf_counter()
        try:
            self.profiler.export_chrome_trace(trace_path)
            events = load_events(trace_path)
        finally:
            if not keep:
                os.unlink(trace_path)
        summary = analyse(events, steps=self.profiled_steps, lines=self.line_info, modules=self.module_paths,
                          user_file=self._user_file, probe_file=self._probe_file, window_us=self.window_s * 1e6,
                          top=int(self.ctx.options.get("profile_top", 15)))
        summary["profiled_steps"] = self.profiled_steps
        summary["step_unit"] = "optimizer step" if self.optimizer_seen else "forward call"
        summary["trace"] = trace_path if keep else None
        summary["trace_events"] = len(events)
        summary["analysis_s"] = round(time.perf_counter() - started, 3)
        summary["with_stack"] = self.with_stack
        return summary

    def _report(self, result: dict[str, Any]) -> None:
        lines = [r for r in result.get("lines", ()) if r.get("path")]
        attributed = sum(r["total_ms"] for r in result.get("lines", ()))
        if len(lines) < 2 or attributed <= 0:
            return
        hot = lines[0]
        share = hot["total_ms"] / attributed
        if share < HOT_SPOT_SHARE:
            return
        from torchlint.probe import Site

        shapes = f", shapes {', '.join(hot['shapes'])}" if hot.get("shapes") else ""
        self.ctx.evidence(
            self, code=None, runtime_code="TL712", at=Site(hot["path"], hot["line"], hot.get("function", "")),
            message=(f"hot spot: this line takes {share:.0%} of the time attributed to lines "
                     f"({hot['total_ms']:.2f} ms per {result.get('step_unit', 'step')}: forward {hot['forward_ms']:.2f}, "
                     f"backward {hot['backward_ms']:.2f}); ops {', '.join(hot['ops'][:3])}{shapes}"),
            data={"share": round(share, 3), **hot},
        )


class _quiet:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *args: Any) -> bool:
        return True


PROBE = ProfileProbe
