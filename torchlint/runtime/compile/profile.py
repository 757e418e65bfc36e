"""The compiled profile next to eager (``torchlint run --compile --profile``); child process only.

After the program has run, the callable it compiled (or else its model) is compiled with
Inductor, the backend that generates kernels, with two of Inductor's debugging switches on:
``cpp.enable_kernel_profile`` (each C++ kernel becomes a profiler range, as in PyTorch's
"Inductor CPU backend debugging and profiling" tutorial) and provenance tracking (which user
stack each kernel's operations came from). Then, on the inputs of the program's first call,
after warm-up:

- eager and compiled calls alternate under a clock (``compile.check._timed_pair``): the
  per-call times and their ratio, the tutorial's speed-up;
- a few calls of each, alternating in one ``torch.profiler`` session: eagerly, each torch call
  inside a range naming its user stack; compiled, with Python frames (the eager pieces between
  graphs); ``kernel_attribution`` puts both on user lines, functions and kernels, and takes the
  median over the calls.

Inductor's structured-trace artifacts of the compile give each graph's generated code
(``output_code.py``), its standalone repro (``fx_graph_runnable.py``, as
``TORCH_COMPILE_DEBUG=1`` writes them) and the kernels' user stacks; the hottest graph's two
files are written next to the report. Only imported when both ``--compile`` and ``--profile``
are asked for.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Callable

import torch

from torchlint.runtime.compile.check import TraceLogHandler, _eval_mode, _timed_pair, call, inductor_cache_dir, quiet_compiler_logs
from torchlint.runtime.frames import USER, FrameClassifier, generated_dirs
from torchlint.runtime.compile.kernel_attribution import (
    CALL_PREFIX, STACK_PREFIX, Graph, SourceFunctions, attribute, compare, graph_id_of, kernel_lines, kernel_stacks, kernel_stacks_from_nodes,
    median_profile, slower_regions, split_calls, transfer_durations,
)

try:  # a range without a dispatcher call of its own (see the profile probe)
    from torch._C._profiler import _RecordFunctionFast as _Range
except ImportError:  # older torch
    from torch.autograd.profiler import record_function as _Range

#: Profiled calls: enough for about this much eager time, within these bounds.
PROFILE_SECONDS = 0.3
MIN_CALLS, MAX_CALLS = 3, 20
#: Above this (bare profiled call / timed call), the profiler's cost is most of what it
#: measures: per-line and per-function times are not shown. Measured on a busy 2-core machine,
#: bare sessions ran 1.0-1.6x the timed call (3.3x with another compile running beside them);
#: with stack ranges and Python frames, a call of 16x16 matmuls ran 6x.
MAX_INFLATION = 6.0
#: Inductor's debugging switches for this compile (the config is part of its cache key: a
#: second run finds these kernels in TORCHINDUCTOR_CACHE_DIR).
INDUCTOR_DEBUG = {"cpp.enable_kernel_profile": True, "trace.provenance_tracking_level": 1}


class GraphArtifacts(TraceLogHandler):
    """Each compiled graph's generated code, runnable repro and kernel stacks, read from
    Inductor's structured trace (emitted on a compile and on an FX graph cache hit alike)."""

    def __init__(self) -> None:
        super().__init__()
        self.graphs: list[Graph] = []
        self._current: Graph | None = None
        #: node name -> stack trace, of the graph Dynamo handed Inductor last (see ``backend``)
        self.node_traces: dict[str, str] = {}

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if not isinstance(metadata, dict):
            return
        payload = getattr(record, "payload", None)
        name = (metadata.get("artifact") or {}).get("name")
        if name == "fx_graph_runnable":
            self._graph(new_if="runnable").runnable = payload
        elif "inductor_output_code" in metadata:
            graph = self._graph(new_if="output_code")
            graph.output_code = payload
            graph.output_code_path = (metadata["inductor_output_code"] or {}).get("file_path")
            graph.graph_id, graph.kind = graph_id_of(payload or "")
        elif name == "inductor_provenance_tracking_node_mappings":
            self._graph(new_if="mapping").mapping = _json(payload)  # type: ignore[attr-defined]
        elif name == "inductor_provenance_tracking_kernel_stack_traces":
            self._graph(new_if="provenance").provenance = _json(payload)  # type: ignore[attr-defined]
            self._close()

    def _graph(self, new_if: str) -> Graph:
        current = self._current
        if current is not None and getattr(current, new_if, None) is not None:
            self._close()
            current = None
        if current is None:
            current = self._current = Graph(graph_id=None)
            current.provenance = current.mapping = None  # type: ignore[attr-defined]
            current.node_traces = self.node_traces  # type: ignore[attr-defined]
        return current

    def _close(self) -> None:
        if self._current is not None and self._current.output_code is not None:
            self.graphs.append(self._current)
        self._current = None

    def finish(self, user_file: Callable[[str], str | None]) -> list[Graph]:
        self._close()
        for graph in self.graphs:
            # This run's stack traces first: those a cached graph carries may be another run's.
            graph.kernels = (kernel_stacks_from_nodes(getattr(graph, "mapping", None) or {}, graph.node_traces, user_file)
                             or kernel_stacks(getattr(graph, "provenance", None) or {}, user_file))
        return self.graphs

    def backend(self, options: dict[str, Any]) -> Callable:
        """Inductor, noting the stack trace of each node of the graph Dynamo hands it."""
        def inductor_noting_stacks(gm: Any, example_inputs: Any) -> Any:
            from torch._inductor.compile_fx import compile_fx

            self.node_traces = {node.name: node.meta.get("stack_trace") or "" for node in gm.graph.nodes}
            return compile_fx(gm, example_inputs, config_patches=options or None)

        return inductor_noting_stacks


class StackRanges(torch.overrides.TorchFunctionMode):
    """Eager replay: each top-level torch call inside a ``tl-stack: <n>`` profiler range, ``n``
    numbering the user stack (outermost frame first) it was called from."""

    def __init__(self, frames: FrameClassifier, boundary: Any = None) -> None:
        super().__init__()
        self.frames = frames
        self.boundary = boundary  # the code calling the target: frames from it outward are not the call's
        self.stacks: dict[int, list[tuple[str, int, str]]] = {}
        self._ids: dict[tuple, int] = {}

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        stack = []
        frame = sys._getframe(1)
        while frame is not None and frame.f_code is not self.boundary:
            filename = frame.f_code.co_filename
            if self.frames.verdict(filename) == USER:
                stack.append((os.path.abspath(filename), frame.f_lineno, frame.f_code.co_name))
            frame = frame.f_back
        key = tuple(reversed(stack))
        number = self._ids.get(key)
        if number is None:
            number = self._ids[key] = len(self._ids)
            self.stacks[number] = list(key)
        with _Range(f"{STACK_PREFIX}{number}"):
            return func(*args, **(kwargs or {}))


def _json(payload: Any) -> dict:
    try:
        value = json.loads(payload) if payload else {}
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def user_file_resolver(frames: FrameClassifier) -> Callable[[str], str | None]:
    """A file name as a stack trace or the profiler's ``python_function`` events give it
    (absolute, or relative to a ``sys.path`` entry) -> the user's absolute path, or None."""
    cache: dict[str, str | None] = {}
    generated = generated_dirs()

    def resolve(name: str) -> str | None:
        if name in cache:
            return cache[name]
        found = None
        candidates = [name] if os.path.isabs(name) else [os.path.join(p or os.getcwd(), name) for p in sys.path]
        for candidate in candidates:
            if os.path.isfile(candidate) and frames.verdict(candidate) == USER and not os.path.realpath(candidate).startswith(generated):
                found = os.path.abspath(candidate)
                break
        cache[name] = found
        return found

    return resolve


def _profiled(eager: Callable[[], Any], compiled: Callable[[], Any], calls: int, ranges: StackRanges | None,
              with_stack: bool) -> list[dict]:
    """One profiling session, eager and compiled calls alternating, each in a ``tl-call`` range;
    with ``ranges`` (each eager torch call in its stack's range) and Python frames (the compiled
    side's eager pieces between graphs) for attribution, or bare for durations."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    handle, path = tempfile.mkstemp(prefix="torchlint-compiled-profile-", suffix=".json")
    os.close(handle)
    try:
        with profile(activities=activities, with_stack=with_stack) as prof:
            for _ in range(calls):
                with _Range(f"{CALL_PREFIX}eager"), (ranges if ranges is not None else contextlib.nullcontext()):
                    eager()
                _synchronize()
                with _Range(f"{CALL_PREFIX}compiled"):
                    compiled()
                _synchronize()
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as stream:
            document = json.load(stream)
    finally:
        os.unlink(path)
    events = document.get("traceEvents", []) if isinstance(document, dict) else document
    return [e for e in events if isinstance(e, dict) and e.get("ph") == "X" and "dur" in e]


def _synchronize() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


class CompiledProfile:
    """Eager against Inductor on one callable and its captured inputs."""

    def __init__(self, target: Callable, calls: list[tuple[tuple, dict]], *, frames: FrameClassifier,
                 options: dict[str, Any] | None = None, dump_dir: str | None = None,
                 progress: Callable[[str], None] = lambda message: None) -> None:
        self.target = target
        self.args, self.kwargs = calls[0]
        self.frames = frames
        options = {k: v for k, v in (options or {}).items() if v is not None}
        self.compile_options = {k: v for k, v in options.items() if k in ("dynamic", "fullgraph")}
        # The program's `mode` and `options` become Inductor's config (a backend of our own takes neither).
        self.inductor_options = dict(options.get("options") or {})
        if options.get("mode") not in (None, "default"):
            import torch._inductor

            self.inductor_options = {**torch._inductor.list_mode_options(options["mode"], options.get("dynamic")),
                                     **self.inductor_options}
        self.dump_dir = dump_dir
        self.progress = progress

    def run(self) -> dict[str, Any]:
        import torch._dynamo
        import torch._inductor.config as inductor_config

        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", inductor_cache_dir())
        user_file = user_file_resolver(self.frames)
        artifacts = GraphArtifacts()
        torch._dynamo.reset()
        artifacts.install()
        result: dict[str, Any] = {"backend": "inductor", "mode": "forward, no_grad", "threads": torch.get_num_threads()}
        try:
            with quiet_compiler_logs(), inductor_config.patch(INDUCTOR_DEBUG), torch.no_grad(), _eval_mode(self.target):
                compiled = torch.compile(self.target, backend=artifacts.backend(self.inductor_options), **self.compile_options)
                self.progress("compiled profile: compiling with Inductor (kernel profile on)")
                started = time.perf_counter()
                call(compiled, self.args, self.kwargs)
                result["compile_s"] = round(time.perf_counter() - started, 3)
                artifacts.uninstall()  # the graphs are known; later calls only replay them

                def eager() -> Any:
                    return call(self.target, self.args, self.kwargs)

                def fast() -> Any:
                    return call(compiled, self.args, self.kwargs)

                for _ in range(2):  # warm-up: caches, allocator, lazy initialisation
                    eager()
                    fast()
                self.progress("compiled profile: timing eager vs compiled")
                eager_times, compiled_times = _timed_pair(eager, fast)
                eager_ms = statistics.median(eager_times) * 1e3
                compiled_ms = statistics.median(compiled_times) * 1e3
                calls = max(MIN_CALLS, min(MAX_CALLS, int(PROFILE_SECONDS * 1e3 / max(eager_ms, 1e-3))))
                self.progress(f"compiled profile: profiling {calls} calls of each")
                ranges = StackRanges(self.frames, boundary=eager.__code__)
                plain = split_calls(_profiled(eager, fast, calls, None, with_stack=False))
                events = _profiled(eager, fast, calls, ranges, with_stack=True)
        finally:
            artifacts.uninstall()
            with contextlib.suppress(Exception):
                torch._dynamo.reset()  # the next check compiles afresh
        graphs = artifacts.finish(user_file)
        runs = split_calls(events)
        # Durations from the bare session (annotations slow the operations around them too);
        # who called what from the annotated one.
        result["durations_from"] = {kind: "bare profile" if transfer_durations(plain.get(kind, []), runs.get(kind, []))
                                    else "annotated profile" for kind in ("eager", "compiled")}
        function_of = SourceFunctions()
        eager_run, eager_scale = _side(runs.get("eager", []), plain.get("eager", []), eager_ms, stacks=ranges.stacks,
                                       user_file=user_file, function_of=function_of)
        compiled_run, compiled_scale = _side(runs.get("compiled", []), plain.get("compiled", []), compiled_ms, graphs=graphs,
                                             user_file=user_file, function_of=function_of)
        comparison = compare(eager_run, compiled_run, eager_ms=eager_ms, compiled_ms=compiled_ms,
                             eager_scale=eager_scale, compiled_scale=compiled_scale)
        result["profiler_scale"] = {"eager": round(eager_scale, 3), "compiled": round(compiled_scale, 3)}
        inflation = {kind: _inflation(plain.get(kind, []), timed) for kind, timed in (("eager", eager_ms), ("compiled", compiled_ms))}
        result["profiler_inflation"] = inflation
        for kernel in comparison["kernels"]:
            kernel["lines"] = kernel_lines(graphs, kernel["name"], kernel["graph"])
        result.update(comparison)
        result["timed_calls"] = [len(eager_times), len(compiled_times)]
        result["spread_ms"] = {"eager": _spread(eager_times), "compiled": _spread(compiled_times)}
        result["profiled_calls"] = calls
        result["graphs"] = len(graphs)
        worst = max(inflation.values())
        if worst > MAX_INFLATION:
            # The profiler's own cost swamps the calls (a small model): per-region times would be
            # the profiler's, so none is shown or reported; the timed call and kernels stand.
            result["regions_skipped"] = (f"profiling made a call {worst:.1f} times as long as timed: too small a call to "
                                         f"time its lines and functions (the whole call is timed without the profiler)")
            result["lines"], result["functions"] = [], []
            result["slower"] = []
        else:
            result["slower"] = slower_regions(comparison)
        dump = self._dump(graphs, compiled_run.kernels)
        if dump:
            result["debug_dump"] = dump
        if not graphs:
            result["note"] = "Inductor compiled no graph (everything ran eagerly)"
        elif not compiled_run.kernels:
            result["note"] = "no kernel of the compiled graphs showed in the profile"
        return result

    def _dump(self, graphs: list[Graph], kernels: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
        """The hottest graph's ``fx_graph_runnable.py`` and ``output_code.py``."""
        if not graphs:
            return None
        time_of: dict[Any, float] = {}
        for entry in kernels.values():
            time_of[entry["graph"]] = time_of.get(entry["graph"], 0.0) + entry["us"]
        hottest = graphs[max(range(len(graphs)), key=lambda index: time_of.get(index, 0.0))]
        folder = os.path.join(self.dump_dir, "compiled_graph") if self.dump_dir else tempfile.mkdtemp(prefix="torchlint-compiled-graph-")
        os.makedirs(folder, exist_ok=True)
        written = {"graph": graphs.index(hottest), "aot_id": hottest.graph_id, "kind": hottest.kind, "folder": folder}
        for name, text in (("fx_graph_runnable.py", hottest.runnable), ("output_code.py", hottest.output_code)):
            if text:
                path = os.path.join(folder, name)
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(text)
                written[name.split(".")[0]] = path
        return written


def _inflation(calls: list[list[dict]], timed_ms: float) -> float:
    """How many times as long a profiled call took as a timed one."""
    if not calls or timed_ms <= 0:
        return 1.0
    return round(statistics.median(float(call[0]["dur"]) for call in calls) / (timed_ms * 1000.0), 2)


def _side(calls: list[list[dict]], plain: list[list[dict]], timed_ms: float, **how: Any) -> tuple[Any, float]:
    """One side's profile: the median over its calls, scaled by the timed call over the bare
    profiled call (the profiler slows the operations it records, by a factor measured at 1.5 to
    3 on a busy 2-core machine, not by a constant: a tiny operation is recorded at its own
    0.5 µs)."""
    profile = median_profile([attribute(call, **how) for call in calls])
    walls = [float(call[0]["dur"]) for call in (plain or calls)]
    if not walls or profile.device != "cpu":
        return profile, 1.0
    return profile, min(1.0, timed_ms * 1000.0 / statistics.median(walls))


def _spread(times: list[float]) -> list[float]:
    """The interquartile range in ms: how far to trust the medians."""
    if len(times) < 4:
        return [round(min(times) * 1e3, 4), round(max(times) * 1e3, 4)]
    quartiles = statistics.quantiles(times, n=4)
    return [round(quartiles[0] * 1e3, 4), round(quartiles[2] * 1e3, 4)]
