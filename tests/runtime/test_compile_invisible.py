"""Programs that compile themselves run under `torchlint run` as they do under `python`.

The programs of PyTorch's tutorial "Inductor CPU backend debugging and profiling" (the
correct uint8 one, the float one with its injected Inductor accuracy bug) and a compiled
training step, each run both ways: the same printed lines, the same exception (the float
program's own assert must fail under torchlint too), and no finding located in torchlint's
own files. They compile with Inductor, through a shared cache.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from conftest import EXAMPLES, ROOT, torchlint_run  # noqa: E402

TUTORIAL = EXAMPLES.parent / "compile" / "tutorial"
OWN = (ROOT / "torchlint", ROOT / "plugins")

#: The last line of a traceback: `AssertionError`, `torch._inductor.exc.InductorError: ...`.
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b(: .*)?$")


def exception_line(stderr: str) -> str | None:
    lines = [line for line in stderr.splitlines() if _EXCEPTION.match(line)]
    return lines[-1] if lines else None


def run_plainly(program: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, program], cwd=TUTORIAL, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, **env))


@pytest.fixture(scope="module")
def plain_runs(inductor_cache):
    """Each program run plainly once, however many devices compare against it (a run with
    Inductor costs seconds of CPU)."""
    runs: dict[str, subprocess.CompletedProcess] = {}

    def plain(program: str) -> subprocess.CompletedProcess:
        if program not in runs:
            runs[program] = run_plainly(program, inductor_cache)
        return runs[program]

    return plain


def in_torchlints_files(finding: dict, cwd: Path) -> bool:
    path = (cwd / finding["filename"]).resolve()
    return any(path.is_relative_to(own.resolve()) for own in OWN)


#: fake-cuda only where its simulation is not in the way: the simulation's mode stays on
#: inside compiled code (CUDA placement is what it simulates) and Dynamo runs it untraced,
#: a graph break at each torch call, so Inductor compiles nothing there and the float
#: program's Inductor bug does not show (runtime/compile/regions.py says why).
@pytest.mark.slow
@pytest.mark.parametrize("program, raises, device", [("uint8.py", None, "cpu"), ("float_neg_bug.py", "AssertionError", "cpu"),
                                                     ("train_step.py", None, "cpu"), ("uint8.py", None, "fake-cuda"),
                                                     ("train_step.py", None, "fake-cuda")])
def test_a_program_that_compiles_itself_runs_the_same_under_torchlint(program, raises, device, inductor_cache, plain_runs):
    plain = plain_runs(program)
    assert exception_line(plain.stderr) == raises, plain.stderr[-3000:]  # the program is what it claims
    printed = plain.stdout.splitlines()
    assert printed, plain.stderr[-3000:]

    run = torchlint_run(program, "--device", device, "--output-format", "json", cwd=TUTORIAL, timeout=300, env=inductor_cache)
    # The program's output reaches torchlint's stderr (with its own and torch's lines).
    assert [line for line in run.stderr.splitlines() if line in printed] == printed, run.stderr[-3000:]
    assert exception_line(run.stderr) == raises, run.stderr[-3000:]
    assert run.report["outcome"]["status"] == ("raised" if raises else "completed"), run.report["outcome"]
    if raises:
        [crash] = [f for f in run.findings() if f["code"] == "TL702"]
        assert crash["filename"] == program and raises in crash["message"]
    assert not [f for f in run.findings() if in_torchlints_files(f, TUTORIAL)], run.findings()


# -- with --compile: the program's own compiled function is what the ladder checks ----------------

def line_of(program: str, text: str) -> int:
    lines = (TUTORIAL / program).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.strip().startswith(text))


@pytest.mark.slow
def test_plain_compile_climbs_to_inductor_and_reports_the_injected_drift_at_the_users_call(inductor_cache):
    run = torchlint_run("float_neg_bug.py", "--compile", "--output-format", "json", cwd=TUTORIAL, timeout=300, env=inductor_cache)
    assert exception_line(run.stderr) == "AssertionError", run.stderr[-3000:]  # the program still fails its assert
    result = run.report["compile"]
    assert result["model"] == "foo2" and result["program_backend"] == "inductor"
    assert [(r["backend"], r["status"]) for r in result["rungs"]] == [("eager", "ok"), ("aot_eager", "ok"), ("inductor", "ok")]
    [drift] = [f for f in run.findings() if f["code"] == "TL710"]
    assert drift["filename"] == "float_neg_bug.py"
    assert drift["location"]["row"] == line_of("float_neg_bug.py", "actual_result = compiled_foo2(x1, x2)")
    assert "backend inductor" in drift["message"] and f"torch.compile at line {line_of('float_neg_bug.py', 'compiled_foo2 =')}" in drift["message"]
    assert not [f for f in run.findings() if f["code"] in ("TL708", "TL711")], run.findings()
    assert not [f for f in run.findings() if in_torchlints_files(f, TUTORIAL)], run.findings()


@pytest.mark.slow
def test_a_compile_failure_points_at_the_users_call_with_the_compilers_first_error(inductor_cache):
    run = torchlint_run("float_neg_cxx.py", "--compile", "--output-format", "json", cwd=TUTORIAL, timeout=300, env=inductor_cache)
    call = line_of("float_neg_cxx.py", "actual_result = compiled_foo2(x1, x2)")
    [failure] = [f for f in run.findings() if f["code"] == "TL709"]
    # One failure, one finding: the program died of the compile error TL709 reports (no TL702 beside it).
    assert [f for f in run.findings() if f["code"] == "TL702"] == []
    assert run.report["outcome"]["status"] == "raised" and run.returncode == 1  # the program's own error, as under python
    assert (failure["filename"], failure["location"]["row"]) == ("float_neg_cxx.py", call), failure
    assert "error: no match for" in failure["message"] and "operator*" in failure["message"]
    assert "Command:" not in failure["message"] and inductor_cache["TORCHINDUCTOR_CACHE_DIR"] not in failure["message"]
    assert "in Inductor" in failure["message"]
    assert [(r["backend"], r["status"]) for r in run.report["compile"]["rungs"]] == [
        ("eager", "ok"), ("aot_eager", "ok"), ("inductor", "failed")]


@pytest.mark.slow
@pytest.mark.parametrize("program", ["uint8.py", "train_step.py"])
def test_compile_reports_nothing_of_torchlints_own(program, inductor_cache):
    run = torchlint_run(program, "--compile", "--output-format", "json", cwd=TUTORIAL, timeout=300, env=inductor_cache)
    assert run.report["outcome"]["status"] == "completed", run.stderr[-3000:]
    assert not [f for f in run.findings() if in_torchlints_files(f, TUTORIAL)], run.findings()
    result = run.report["compile"]
    assert result["compiled_at"][1] == line_of(program, "compiled_foo1 =" if program == "uint8.py" else "@torch.compile")
    if program == "uint8.py":
        assert not run.findings() and result["accuracy"]["ok"] and result["rungs"][-1]["backend"] == "inductor"
    else:  # the step's own breaks (backward, zero_grad), at its lines, as plain Dynamo reports them
        breaks = {f["location"]["row"] for f in run.findings() if f["code"] == "TL708" and f["filename"] == program}
        assert breaks == {line_of(program, "optimizer.zero_grad()"), line_of(program, "loss.backward()")}, run.findings()
