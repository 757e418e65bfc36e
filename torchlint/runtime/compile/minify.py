"""A minimal repro of an Inductor failure, attached to the compile probe's finding (`--minify`).

Child of `torchlint run` only, and only when the ladder found Inductor failing: a compile
error (TL709 in Inductor) or an output that drifts from eager (TL710 with backend inductor)
while the lower rungs matched. Dynamo's and AOTAutograd's failures happen while tracing,
before there is a graph to shrink, and are not minified.

1. Here: compile the failing callable once more with a backend that keeps the aten graphs
   AOTAutograd hands Inductor (one per graph-break piece) and the real tensors they are
   called with, and write each as torch's repro module (``graph_N.py``, runnable alone) with
   its inputs in a content store, and each op's user line (Dynamo's stack trace).
2. In a worker process with the ``--minify-timeout`` budget (killed with everything it
   started on expiry): the debug dump, then ``fx_minifier`` (compile.minify_worker).
3. Here again: run the minified script alone, with what is left of the budget, and say
   whether it fails the same way (the minifier is known to turn an accuracy failure into
   another one).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from typing import Any, Callable

DEFAULT_TIMEOUT_S = 120.0
#: Graph-break pieces written for the worker to try, in the order they ran.
MAX_GRAPHS = 8

_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in [^\n]*\n(?P<code>[^\n]*)')


def minify_kind(result: dict[str, Any]) -> tuple[str | None, str]:
    """("compile" | "accuracy", "") when the ladder's failure can be minified, else (None, why not)."""
    failure = result.get("failure")
    if failure:
        if failure.get("backend") != "inductor":
            return None, (f"the failure is in {failure.get('stage')}, while tracing: the minifier shrinks the graph "
                          "Inductor compiles, and there is none yet")
        return "compile", ""
    accuracy = result.get("accuracy")
    if accuracy and not accuracy.get("ok"):
        if accuracy.get("backend") != "inductor":
            return None, (f"the output already differs with backend {accuracy.get('backend')}: the program computes "
                          "something else when compiled, no compiler bug to shrink")
        return "accuracy", ""
    return None, ""


def origins(gm: Any, is_user: Callable[[str], bool]) -> list[dict[str, Any]]:
    """Each op of the graph, in order, with the user line Dynamo traced it from."""
    out = []
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        at, code = None, ""
        for frame in _FRAME.finditer(node.meta.get("stack_trace") or ""):
            if is_user(frame.group("path")):
                at, code = [frame.group("path"), int(frame.group("line"))], frame.group("code").strip()
        out.append({"op": str(node.target), "at": at, "code": code})
    return out


def capture_graphs(model: Callable, args: tuple, kwargs: dict) -> list[tuple[Any, list]]:
    """The aten graphs AOTAutograd gives Inductor for this call (forward, no_grad, eval mode,
    as the ladder's comparison ran), each with clones of the tensors it is called with."""
    import torch
    import torch._dynamo
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func
    from torch._inductor.decomposition import select_decomp_table

    from torchlint.runtime.compile.check import _eval_mode

    graphs: list[tuple[Any, list]] = []

    def keep(gm: Any, example_inputs: list) -> Callable:
        slot: list = []
        graphs.append((gm, slot))

        def run(*inputs: Any) -> Any:
            if not slot:
                slot.extend(t.detach().clone() if isinstance(t, torch.Tensor) else t for t in inputs)
            return gm(*inputs)

        return make_boxed_func(run)

    torch._dynamo.reset()
    try:
        with torch.no_grad(), _eval_mode(model):
            torch.manual_seed(0)
            # Inductor's decompositions, as its own AOTAutograd call applies them: the graph it compiles.
            backend = aot_autograd(fw_compiler=keep, decompositions=select_decomp_table())
            torch.compile(model, backend=backend)(*args, **kwargs)
    finally:
        torch._dynamo.reset()
    return [(gm, slot) for gm, slot in graphs if slot][:MAX_GRAPHS]


def write_graphs(graphs: list[tuple[Any, list]], folder: str, kind: str, is_user: Callable[[str], bool]) -> list[dict[str, Any]]:
    from torch._dynamo.repro.after_aot import generate_compiler_repro_string

    from torchlint.runtime.compile.repro_script import standalone_main

    store = os.path.join(folder, "graph_inputs")
    written = []
    for index, (gm, inputs) in enumerate(graphs):
        path = os.path.join(folder, f"graph_{index}.py")
        text = generate_compiler_repro_string(gm, inputs, save_dir=store)
        with open(path, "w", encoding="utf-8") as out:
            out.write(f"# Graph {index} of the failing callable, as AOTAutograd handed it to Inductor (not minified).\n"
                      + text + standalone_main(kind, "graph_inputs"))
        written.append({"graph": path, "store": store, "origins": origins(gm, is_user)})
    return written


def run_bounded(command: list[str], *, cwd: str, timeout: float, log: str) -> tuple[int | None, float]:
    """The command in a session of its own, killed with all it started when ``timeout`` runs
    out (Inductor compiles in worker processes). (exit code or None on timeout, seconds)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHLINT_")}
    env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")  # no compile pool to start on a small machine
    started = time.monotonic()
    with open(log, "w", encoding="utf-8") as output:
        proc = subprocess.Popen(command, cwd=cwd, stdout=output, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            code: int | None = proc.wait(timeout=max(timeout, 0.1))
        except subprocess.TimeoutExpired:
            code = None
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # its compile workers too, on expiry or not
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
    return code, round(time.monotonic() - started, 2)


def minify(model: Callable, calls: list, result: dict[str, Any], *, folder: str, timeout: float,
           is_user: Callable[[str], bool], progress: Callable[[str], None] = lambda m: None) -> dict[str, Any] | None:
    """The minify record for the report, or None when the ladder's result has nothing to minify."""
    kind, why_not = minify_kind(result)
    if kind is None:
        return {"status": "not attempted", "reason": why_not} if why_not else None
    deadline = time.monotonic() + timeout
    failure = result.get("failure") or {}
    record: dict[str, Any] = {"kind": kind, "timeout_s": timeout, "folder": folder, "stage": _stage(failure) if failure else "Inductor"}
    if kind == "compile":
        from torchlint.runtime.compile.check import compiler_error

        # The ladder's message ends with the compiler's first error line when there is one.
        in_message = re.search(r"(?:^|: )(error: .+)$", failure.get("message", ""))
        record["error_line"] = in_message.group(1) if in_message else compiler_error(failure.get("traceback", ""))
        record["error_type"] = _inner_error_type(failure)
    _fresh(folder)
    marker = _mark_unfinished(folder)
    try:
        finished = _minify_into(folder, model, calls, record, kind, deadline, timeout, is_user, progress)
    except Exception:  # a failure the probe reports: the folder holds what it holds, and says no more
        _remove(marker)
        raise
    # Not reached when the run is stopped (Ctrl-C, a kill, its --timeout): the marker then says
    # that the files beside it may be partial.
    _remove(marker)
    return finished


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


#: What a run killed while minifying leaves in the folder to say so.
UNFINISHED = "UNFINISHED.txt"
#: Of the budget, what the check that the repro fails alone keeps for itself: the minifier
#: stops in time to leave it (it used to take all but 6 s of 120).
VERIFY_SHARE, VERIFY_MIN_S, VERIFY_MAX_S = 0.25, 10.0, 60.0


def _mark_unfinished(folder: str) -> str:
    marker = os.path.join(folder, UNFINISHED)
    with open(marker, "w", encoding="utf-8") as out:
        out.write(f"torchlint run --minify (process {os.getpid()}) was writing this folder and did not finish: the run was "
                  "stopped before it could (Ctrl-C, a kill, its --timeout). The files here may be partial; run it again.\n")
    return marker


def _minify_into(folder: str, model: Callable, calls: list, record: dict[str, Any], kind: str, deadline: float,
                 timeout: float, is_user: Callable[[str], bool], progress: Callable[[str], None]) -> dict[str, Any]:
    progress(f"compile: minifying the {kind} failure (at most {timeout:g} s)")
    args, kwargs = calls[0]
    graphs = capture_graphs(model, args, kwargs)
    if not graphs:
        return dict(record, status="not attempted", reason="AOTAutograd handed Inductor no graph for this call")
    written = write_graphs(graphs, folder, kind, is_user)
    record["graphs"] = [g["graph"] for g in written]
    spec_path = os.path.join(folder, "spec.json")
    with open(spec_path, "w", encoding="utf-8") as out:
        json.dump({"kind": kind, "graphs": written, "error_line": record.get("error_line"),
                   "error_type": record.get("error_type")}, out)
    reserve = min(VERIFY_MAX_S, max(VERIFY_MIN_S, VERIFY_SHARE * timeout), timeout / 2)
    code, seconds = run_bounded([sys.executable, "-m", "torchlint.runtime.compile.minify_worker", spec_path], cwd=os.getcwd(),
                                timeout=max(1.0, deadline - reserve - time.monotonic()), log=os.path.join(folder, "minify.log"))
    record.update(_read_result(folder))
    record["seconds"] = seconds
    if code is None:
        record["status"] = "timed out"
        record["reason"] = (f"the minifier ran past its share of the {timeout:g} s budget (the rest is kept for running "
                            "the repro alone) and was stopped")
    elif code != 0 or record.get("status") not in ("minified", "not_reproduced"):
        record["status"] = "failed"
        record["reason"] = f"the minifier's process ended with exit {code}: {_last_line(os.path.join(folder, 'minify.log'))}"
    elif record["status"] == "not_reproduced":
        record["status"] = "not reproduced"
        record["reason"] = ("Inductor compiled the captured graphs without the failure in a fresh process: it depends "
                            "on the program's own state (a monkeypatch?) or on more than one graph")
    else:
        record["verified"] = verify(record["script"], kind, record.get("error_line"), deadline=deadline)
        record["status"] = "minified"
    return record


def verify(script: str, kind: str, error_line: str | None, *, deadline: float) -> dict[str, Any]:
    """Run the minified script alone: does it fail the SAME way?"""
    from torchlint.runtime.compile.repro_script import read_outcome

    left = deadline - time.monotonic()
    if left < 5:
        return {"same": None, "detail": "no time left in the budget to run the script alone"}
    log = os.path.join(os.path.dirname(script), "repro.log")
    code, seconds = run_bounded([sys.executable, script], cwd=os.getcwd(), timeout=left, log=log)
    if code is None:
        return {"same": None, "detail": f"the script ran past the budget ({seconds:g} s) and was stopped"}
    with open(log, encoding="utf-8", errors="replace") as handle:
        outcome = read_outcome(code, handle.read())
    same = outcome["kind"] == kind and (kind != "compile" or error_line is None or outcome.get("error_line") == error_line)
    return dict(outcome, same=same, seconds=seconds)


def _fresh(folder: str) -> None:
    """An empty folder for this run's files; one a previous --minify wrote (its spec.json
    says so) is cleared, anything else is left alone and written beside."""
    import shutil

    if os.path.exists(os.path.join(folder, "spec.json")):
        shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder, exist_ok=True)


def _read_result(folder: str) -> dict[str, Any]:
    try:
        with open(os.path.join(folder, "result.json"), encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def _last_line(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = [line.strip() for line in handle if line.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


def _inner_error_type(failure: dict[str, Any]) -> str | None:
    match = re.match(r"(\w+):", failure.get("message", ""))
    return match.group(1) if match else failure.get("error")


def _stage(failure: dict[str, Any]) -> str:
    """Inductor's failure, finer: C++/Triton compile of the generated code, or code generation."""
    text = failure.get("traceback", "") + failure.get("message", "")
    if "CppCompileError" in text or "C++ compile error" in text:
        return "C++ compile (Inductor)"
    if "triton" in text.lower() and "CompilationError" in text:
        return "Triton compile (Inductor)"
    return "Inductor code generation"
