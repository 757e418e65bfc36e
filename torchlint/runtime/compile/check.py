"""Compile health of a captured model: graph breaks, recompilations, the backend ladder,
eager-vs-compiled accuracy and speed. Child process only; used by the compile probe.

Graph breaks and recompilations come from Dynamo's structured trace (the records
``TORCH_TRACE`` writes as JSON lines), read in-process by a handler on
``torch._logging._internal.trace_log``: ``dynamo_graph_break_reason`` artifacts carry the
user file and line, the reason, the hints and the graph-break reference URL of every break
(``torch._dynamo.explain`` missed one of three in our measurements), and
``compilation_metrics`` carry each compile's time and ``recompile_reason``.

The ladder compiles with ``eager`` (Dynamo alone), then ``aot_eager`` (+ AOTAutograd), then
``inductor`` (+ code generation) when asked; the first backend that fails names the stage.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import statistics
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

LADDER = ("eager", "aot_eager", "inductor")
STAGE = {"eager": "Dynamo", "aot_eager": "AOTAutograd", "inductor": "Inductor"}

#: (rtol, atol) by dtype for eager vs compiled outputs. Looser than torch.testing's defaults
#: for float32: compiled kernels reorder reductions.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-5),
    torch.float16: (1e-2, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
}

_GB_AT = re.compile(r"Graph break in user code at (?P<path>.+?):(?P<line>\d+)\s*$", re.M)
_GB_REASON = re.compile(r"Graph Break Reason: (?P<reason>.*)", re.M)
_GB_ID = re.compile(r"/gb/(gb\d+)\.html", re.I)
_GB_HINT = re.compile(r"^\s*Hint: (?P<hint>.*)$", re.M)
_GB_EXPLANATION = re.compile(r"^\s*Explanation: (?P<text>.*)$", re.M)
_GB_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)', re.M)
#: Frames through which a mode or tensor subclass intercepts the program's own operation.
_INTERCEPTING = ("__torch_function__", "__torch_dispatch__")
_FILE_LINE = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)')


def inductor_cache_dir() -> str:
    """A persistent TORCHINDUCTOR_CACHE_DIR (Inductor's cold start is ~16 s on 2 cores, ~3.5 s warm)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "torchlint", "inductor")


class TraceLogHandler(logging.Handler):
    """A handler on torch's structured-trace logger (what `TORCH_TRACE` writes), installed for
    as long as it is wanted and removed with the logger's level put back."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self._logger: logging.Logger | None = None
        self._level = logging.NOTSET

    def install(self) -> None:
        from torch._logging._internal import trace_log

        self._logger = trace_log
        self._level = trace_log.level
        trace_log.setLevel(logging.DEBUG)
        trace_log.addHandler(self)

    def uninstall(self) -> None:
        if self._logger is not None:
            self._logger.removeHandler(self)
            self._logger.setLevel(self._level)
            self._logger = None


class TraceCollector(TraceLogHandler):
    """Keeps the structured-trace records Dynamo emits (metadata + payload), as TORCH_TRACE would."""

    KEEP = ("compilation_metrics", "artifact")

    def __init__(self) -> None:
        super().__init__()
        self.records: list[tuple[dict, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if not isinstance(metadata, dict):
            return
        if "compilation_metrics" in metadata:
            self.records.append((metadata, None))
        elif "artifact" in metadata and metadata["artifact"].get("name") in ("dynamo_graph_break_reason", "recompile_reasons"):
            self.records.append((metadata, getattr(record, "payload", None)))

    def take(self) -> list[tuple[dict, Any]]:
        records, self.records = self.records, []
        return records


@dataclass
class GraphBreak:
    path: str
    line: int
    reason: str
    explanation: str = ""
    hints: list[str] = field(default_factory=list)
    ref: str | None = None
    count: int = 0
    functions: set[str] = field(default_factory=set)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "reason": self.reason, "explanation": self.explanation,
                "hints": self.hints, "ref": self.ref, "count": self.count}


def parse_graph_break(payload: str, is_user: Callable[[str], bool] | None = None) -> GraphBreak | None:
    """The graph break in one structured-trace payload, where Dynamo places it ("user code":
    the innermost frame it was tracing, torch's own files included: `optimizer.step()`'s
    deliberate break is in torch/optim). One exception, with ``is_user``: when that frame is a
    mode's or tensor subclass's ``__torch_function__``/``__torch_dispatch__`` (a TorchFunctionMode
    such as ``torch.set_default_device``'s sits between the program and every op), the break is
    the program's own operation, placed at the innermost frame of its traceback that is the
    program's."""
    at = _GB_AT.search(payload or "")
    if at is None:
        return None
    path, line = at.group("path"), int(at.group("line"))
    if is_user is not None and not is_user(path):
        frames = list(_GB_FRAME.finditer(payload.partition("User code traceback:")[2].partition("\n\n")[0]))
        if frames and frames[-1].group("function") in _INTERCEPTING:
            for frame in reversed(frames):
                if is_user(frame.group("path")):
                    path, line = frame.group("path"), int(frame.group("line"))
                    break
    reason_match = _GB_REASON.search(payload)
    reason = reason_match.group("reason").strip() if reason_match else "graph break"
    # "Encountered graph break when attempting to trace CALL: ...:" is followed by the real title.
    body = payload[reason_match.end():] if reason_match else ""
    if reason.endswith(":"):
        for text_line in body.splitlines():
            if text_line.strip():
                reason = text_line.strip()
                break
    explanation = _GB_EXPLANATION.search(body)
    hints = [m.group("hint").strip() for m in _GB_HINT.finditer(body.split("User code traceback:")[0])]
    ref = _GB_ID.search(payload)
    return GraphBreak(
        path=path, line=line, reason=reason,
        explanation=explanation.group("text").strip() if explanation else "",
        hints=hints, ref=ref.group(1).upper() if ref else None,
    )


def summarise_trace(records: list[tuple[dict, Any]], is_user: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """Graph breaks (de-duplicated by line and reason, with counts; at the program's own line
    with ``is_user``, see ``parse_graph_break``) and recompilations."""
    breaks: dict[tuple[str, int, str], GraphBreak] = {}
    recompiles: dict[tuple[str, int, str], dict[str, Any]] = {}
    frames = 0
    compile_seconds = 0.0
    for metadata, payload in records:
        if "compilation_metrics" in metadata:
            metrics = metadata["compilation_metrics"] or {}
            frames += 1
            compile_seconds += float(metrics.get("entire_frame_compile_time_s") or 0.0)
            reason = metrics.get("recompile_reason")
            if reason:
                name = str(metrics.get("co_name") or "?")
                if name.startswith("torch_dynamo_resume_in_"):
                    continue  # the resume function of a graph break: its parent's recompile says it
                key = (str(metrics.get("co_filename")), int(metrics.get("co_firstlineno") or 1), name)
                entry = recompiles.setdefault(key, {"path": key[0], "line": key[1], "function": name, "count": 0, "reasons": []})
                entry["count"] += 1
                for part in str(reason).splitlines():
                    part = part.strip().strip('"[],').strip()
                    part = re.sub(r"^\d+/\d+: ", "", part)
                    if part and part not in entry["reasons"]:
                        entry["reasons"].append(part)
            continue
        artifact = metadata.get("artifact") or {}
        if artifact.get("name") == "dynamo_graph_break_reason" and isinstance(payload, str):
            parsed = parse_graph_break(payload, is_user)
            if parsed is None:
                continue
            key = (parsed.path, parsed.line, parsed.reason)
            entry = breaks.setdefault(key, parsed)
            entry.count += 1
    return {
        "graph_breaks": [b.to_json() for b in sorted(breaks.values(), key=lambda b: (b.path, b.line))],
        "recompilations": sorted(recompiles.values(), key=lambda r: (r["path"], r["line"])),
        "frames_compiled": frames,
        "dynamo_seconds": round(compile_seconds, 3),
    }


# -- running the model --------------------------------------------------------------------------

def call(model: Callable, args: tuple, kwargs: dict) -> Any:
    return model(*args, **kwargs)


def tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors(v)]
    out = []
    for attr in ("logits", "loss", "last_hidden_state"):  # dataclass-like outputs
        if isinstance(getattr(value, attr, None), torch.Tensor):
            out.append(getattr(value, attr))
    return out


def compare(expected: Any, actual: Any) -> dict[str, Any]:
    """Max abs / rel error of each output tensor against its dtype's tolerance."""
    want, got = tensors(expected), tensors(actual)
    if len(want) != len(got):
        return {"ok": False, "detail": f"eager returned {len(want)} tensors, compiled {len(got)}"}
    worst: dict[str, Any] = {"ok": True, "max_abs": 0.0, "max_rel": 0.0, "outputs": len(want)}
    for index, (a, b) in enumerate(zip(want, got)):
        if a.shape != b.shape:
            return {"ok": False, "detail": f"output {index}: eager shape {list(a.shape)}, compiled {list(b.shape)}"}
        if not (a.is_floating_point() or a.is_complex()):
            if not torch.equal(a, b):
                return {"ok": False, "detail": f"output {index} ({a.dtype}) differs", "max_abs": float("nan"), "max_rel": float("nan"),
                        "rtol": 0.0, "atol": 0.0, "dtype": str(a.dtype).replace("torch.", ""), "index": index}
            continue
        rtol, atol = TOLERANCES.get(a.dtype, (1e-4, 1e-5))
        a64, b64 = a.detach().double(), b.detach().double()
        diff = (a64 - b64).abs()
        max_abs = float(diff.max()) if diff.numel() else 0.0
        max_rel = float((diff / a64.abs().clamp_min(1e-12)).max()) if diff.numel() else 0.0
        close = bool(torch.allclose(b64, a64, rtol=rtol, atol=atol, equal_nan=True))
        if max_abs >= worst["max_abs"]:
            worst.update(max_abs=max_abs, max_rel=max_rel, rtol=rtol, atol=atol, dtype=str(a.dtype).replace("torch.", ""), index=index)
        if not close:
            worst.update(ok=False, max_abs=max_abs, max_rel=max_rel, rtol=rtol, atol=atol,
                         dtype=str(a.dtype).replace("torch.", ""), index=index)
            return worst
    return worst


#: A compiler's error line: `/tmp/.../c6ah....main.cpp:23:58: error: no match for 'operator*' ...`.
_COMPILER_ERROR = re.compile(r"^(?:\S+?:\d+(?::\d+)?: )?(?:fatal )?error: (?P<text>.+)$", re.M)


def compiler_error(text: str) -> str | None:
    """The first error line of a compiler's output in an exception's message (Inductor's
    CppCompileError carries the whole of g++'s), without the generated file's path."""
    match = _COMPILER_ERROR.search(text)
    return f"error: {match.group('text').strip()}"[:300] if match else None


def generated(path: str) -> bool:
    """A file Inductor wrote (its cache folder): never the user line a failure points at."""
    from torchlint.runtime.frames import generated_dirs

    return os.path.realpath(path).startswith(generated_dirs())


def user_line(exc: BaseException, is_user: Callable[[str], bool]) -> tuple[str, int] | None:
    """The user line an error points at: "from user code" frames in the message, then the
    traceback. Files Inductor generated (its cache folder) are not the user's."""
    def user(path: str) -> bool:
        return is_user(path) and not generated(path)

    text = str(exc)
    found = None
    for match in _FILE_LINE.finditer(text):
        if user(match.group("path")):
            found = (match.group("path"), int(match.group("line")))
    if found:
        return found
    for frame, line in reversed(list(traceback.walk_tb(exc.__traceback__))):
        if user(frame.f_code.co_filename):
            return frame.f_code.co_filename, line
    return None


def _timed_pair(first: Callable[[], Any], second: Callable[[], Any], *, min_calls: int = 5, max_calls: int = 30,
                budget_s: float = 2.0) -> tuple[list[float], list[float]]:
    """Alternating calls, so a busy machine slows both sides alike."""
    a: list[float] = []
    b: list[float] = []
    started = time.perf_counter()
    while len(a) < max_calls and (len(a) < min_calls or time.perf_counter() - started < budget_s):
        for fn, times in ((first, a), (second, b)):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return a, b


@contextlib.contextmanager
def quiet_compiler_logs():
    """Dynamo's own warnings (each graph break, printed with a traceback) would drown the
    report; the probe reports them itself. Errors still show."""
    names = ("torch._dynamo", "torch._inductor", "torch._functorch", "torch.fx", "torch._subclasses")
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


@contextlib.contextmanager
def _eval_mode(model: Any):
    """A module in eval() mode for the comparison; a function as it is."""
    if not isinstance(model, torch.nn.Module):
        yield
        return
    modes = {m: m.training for m in model.modules()}
    model.eval()
    try:
        yield
    finally:
        for m, training in modes.items():
            m.training = training


class CompileChecker:
    """Runs the ladder on ``model`` (a module, or a function the program compiled) with the
    captured ``calls`` ((args, kwargs) per input shape). ``options``: the program's own
    ``torch.compile`` arguments (``dynamic``, ``fullgraph`` for every rung; ``mode`` and
    ``options`` for Inductor's), so each rung compiles what the program compiled."""

    def __init__(self, model: Callable, calls: list[tuple[tuple, dict]], *, top: str,
                 is_user: Callable[[str], bool], progress: Callable[[str], None] = lambda m: None,
                 collector: TraceCollector | None = None, measure_speed: bool = True,
                 backends: dict[str, Any] | None = None, options: dict[str, Any] | None = None) -> None:
        self.model = model
        self.options = dict(options or {})
        self.calls = calls
        self.top = top
        self.rungs = LADDER[: LADDER.index(top) + 1]
        self.is_user = is_user
        self.progress = progress
        self.collector = collector or TraceCollector()
        self.measure_speed = measure_speed
        #: What each rung passes to torch.compile (its name, unless a test or plugin swaps it).
        self.backends = {name: name for name in LADDER} | dict(backends or {})

    def run(self) -> dict[str, Any]:
        import torch._dynamo

        result: dict[str, Any] = {"backend": self.top, "rungs": [], "graph_breaks": [], "recompilations": [],
                                  "accuracy": None, "speed": None, "failure": None}
        args, kwargs = self.calls[0]
        # Eager reference: if the model does not even run eagerly there is nothing to compare.
        try:
            with torch.no_grad(), _eval_mode(self.model):
                torch.manual_seed(0)
                t0 = time.perf_counter()
                expected = call(self.model, args, kwargs)
                eager_first = time.perf_counter() - t0
        except Exception as exc:
            result["skipped"] = f"the model raised {type(exc).__name__} when called eagerly on its captured inputs: {exc}"[:500]
            return result
        compiled_ok = None
        self.collector.install()
        quiet = quiet_compiler_logs()
        quiet.__enter__()
        try:
            for rung in self.rungs:
                self.progress(f"compile: backend {rung} ({STAGE[rung]})")
                entry = self._rung(rung, expected, eager_first)
                result["rungs"].append(entry)
                if entry["status"] == "failed":
                    result["failure"] = entry
                    break
                compiled_ok = rung
                if rung == "eager":
                    trace = summarise_trace(entry.pop("_records"), self.is_user)
                    result["graph_breaks"] = trace["graph_breaks"]
                    result["recompilations"] = trace["recompilations"]
                    result["frames_compiled"] = trace["frames_compiled"]
                else:
                    entry.pop("_records", None)
                accuracy = entry.get("accuracy")
                # The highest rung's comparison, unless a lower rung already differed.
                if accuracy and (result["accuracy"] is None or result["accuracy"]["ok"]):
                    result["accuracy"] = dict(accuracy, backend=rung)
            self.collector.uninstall()
            if compiled_ok and self.measure_speed:
                self.progress(f"compile: timing eager vs {compiled_ok}")
                result["speed"] = self._speed(compiled_ok)
        finally:
            self.collector.uninstall()
            quiet.__exit__(None, None, None)
            with contextlib.suppress(Exception):
                torch._dynamo.reset()
        return result

    def _rung(self, backend: str, expected: Any, eager_first: float) -> dict[str, Any]:
        import torch._dynamo

        torch._dynamo.reset()
        self.collector.take()
        entry: dict[str, Any] = {"backend": backend, "stage": STAGE[backend]}
        compiled = torch.compile(self.model, backend=self.backends[backend], **self._options(backend))
        t0 = time.perf_counter()
        try:
            with torch.no_grad(), _eval_mode(self.model):
                torch.manual_seed(0)
                actual = call(compiled, *self.calls[0])
                entry["first_call_s"] = round(time.perf_counter() - t0, 3)
                for args, kwargs in self.calls[1:]:  # other input shapes: recompilations
                    call(compiled, args, kwargs)
            # Training path too: AOTAutograd only builds the backward graph when grad is on.
            # (A module's: a function may step an optimizer or hold no parameter at all.)
            if backend != "eager" and isinstance(self.model, torch.nn.Module):
                self._forward_backward(compiled)
        except Exception as exc:
            entry.update(status="failed", seconds=round(time.perf_counter() - t0, 3), **self._failure(backend, exc))
            entry["_records"] = self.collector.take()
            return entry
        entry["status"] = "ok"
        entry["seconds"] = round(time.perf_counter() - t0, 3)
        entry["accuracy"] = compare(expected, actual)
        entry["_records"] = self.collector.take()
        metrics = [m for m, _ in entry["_records"] if "compilation_metrics" in m]
        entry["frames"] = len(metrics)
        return entry

    def _forward_backward(self, model: Callable) -> None:
        args, kwargs = self.calls[0]
        with torch.enable_grad():
            out = call(model, args, kwargs)
            outs = [t for t in tensors(out) if t.requires_grad and t.is_floating_point()]
            if outs:
                sum(o.float().sum() for o in outs).backward()
        for p in self.model.parameters():  # type: ignore[union-attr]
            p.grad = None

    def _options(self, backend: str) -> dict[str, Any]:
        keep = ("dynamic", "fullgraph") + (("mode", "options") if backend == "inductor" else ())
        return {k: v for k, v in self.options.items() if k in keep and v is not None}

    def _failure(self, backend: str, exc: BaseException) -> dict[str, Any]:
        stage = STAGE[backend]
        # A BackendCompilerFailed wraps the backend's own error; Dynamo's errors are its own.
        name = type(exc).__name__
        inner = getattr(exc, "inner_exception", None) or exc.__cause__
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else name
        if inner is not None and name == "BackendCompilerFailed":
            message = f"{type(inner).__name__}: {str(inner).strip().splitlines()[0] if str(inner).strip() else ''}"
        compiler = compiler_error(str(exc))
        if compiler:
            message = f"{message}: {compiler}"
        at = user_line(exc, self.is_user)
        return {"stage": stage, "error": name, "message": message[:600], "at": list(at) if at else None,
                "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-6000:]}

    def _speed(self, backend: str) -> dict[str, Any]:
        import torch._dynamo

        args, kwargs = self.calls[0]
        torch._dynamo.reset()
        compiled = torch.compile(self.model, backend=self.backends[backend], **self._options(backend))
        with torch.no_grad():
            t0 = time.perf_counter()
            call(compiled, args, kwargs)
            compile_s = time.perf_counter() - t0
            for _ in range(2):  # warm-up
                call(self.model, args, kwargs)
                call(compiled, args, kwargs)
            eager, fast = _timed_pair(lambda: call(self.model, args, kwargs), lambda: call(compiled, args, kwargs))
        eager_ms = statistics.median(eager) * 1e3
        compiled_ms = statistics.median(fast) * 1e3
        speedup = eager_ms / compiled_ms if compiled_ms > 0 else math.inf
        breakeven = None
        if eager_ms > compiled_ms:
            breakeven = math.ceil(compile_s * 1e3 / (eager_ms - compiled_ms))
        torch._dynamo.reset()
        return {"backend": backend, "eager_ms": round(eager_ms, 4), "compiled_ms": round(compiled_ms, 4),
                "speedup": round(speedup, 3), "compile_s": round(compile_s, 3), "calls": [len(eager), len(fast)],
                "breakeven_calls": breakeven, "mode": "forward, no_grad"}
