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


def in_torchlints_files(finding: dict, cwd: Path) -> bool:
    path = (cwd / finding["filename"]).resolve()
    return any(path.is_relative_to(own.resolve()) for own in OWN)


@pytest.mark.slow
@pytest.mark.parametrize("program, raises", [("uint8.py", None), ("float_neg_bug.py", "AssertionError"),
                                             ("train_step.py", None)])
def test_a_program_that_compiles_itself_runs_the_same_under_torchlint(program, raises, inductor_cache):
    plain = run_plainly(program, inductor_cache)
    assert exception_line(plain.stderr) == raises, plain.stderr[-3000:]  # the program is what it claims
    printed = plain.stdout.splitlines()
    assert printed, plain.stderr[-3000:]

    run = torchlint_run(program, "--output-format", "json", cwd=TUTORIAL, timeout=300, env=inductor_cache)
    # The program's output reaches torchlint's stderr (with its own and torch's lines).
    assert [line for line in run.stderr.splitlines() if line in printed] == printed, run.stderr[-3000:]
    assert exception_line(run.stderr) == raises, run.stderr[-3000:]
    assert run.report["outcome"]["status"] == ("raised" if raises else "completed"), run.report["outcome"]
    if raises:
        [crash] = [f for f in run.findings() if f["code"] == "TL702"]
        assert crash["filename"] == program and raises in crash["message"]
    assert not [f for f in run.findings() if in_torchlints_files(f, TUTORIAL)], run.findings()
