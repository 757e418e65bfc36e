"""Targets that are missing, broken, hostile or endless: a clear report, never a hang."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from conftest import torchlint_run  # noqa: E402


def test_missing_target_is_a_usage_error(tmp_path):
    result = torchlint_run("nope.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "no such file: nope.py" in result.stderr


def test_a_file_that_is_not_python_is_a_usage_error(tmp_path):
    (tmp_path / "data.csv").write_text("a,b\n1,2 3\n")
    (tmp_path / "blob.py").write_bytes(b"\x00\x01binary")
    assert "not valid Python" in torchlint_run("data.csv", cwd=tmp_path).stderr
    result = torchlint_run("blob.py", cwd=tmp_path)
    assert result.returncode == 2 and "NUL bytes" in result.stderr


@pytest.mark.slow
def test_entry_that_does_not_exist_is_a_usage_error(write, tmp_path):
    write("models.py", "def build():\n    pass\n")
    result = torchlint_run("models.py:missing", cwd=tmp_path)
    assert result.returncode == 2
    assert "models.py has no function 'missing' (it defines: build)" in result.stderr


@pytest.mark.slow
def test_script_that_raises_at_import(write, tmp_path):
    write("train.py", "import no_such_module_anywhere\n")
    result = torchlint_run("train.py", "-q", "--output-format", "json", cwd=tmp_path)
    assert result.returncode == 1
    (crash,) = result.findings("runtime only")
    assert crash["code"] == "TL702"
    assert "ModuleNotFoundError" in crash["message"] and crash["location"]["row"] == 1


@pytest.mark.slow
def test_infinite_loop_is_killed_at_the_timeout(write, tmp_path):
    write("train.py", """
        import subprocess, sys, time
        # a grandchild that would outlive a naive kill
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        while True:
            time.sleep(0.1)
    """)
    result = torchlint_run("train.py", "-q", "--timeout", "8", "--output-format", "json", cwd=tmp_path)
    assert result.returncode == 1
    assert result.codes("runtime only") == {"TL703"}
    assert result.report["outcome"]["status"] == "timed-out"
    assert result.seconds < 8 + 15


@pytest.mark.slow
def test_sigabrt_keeps_the_evidence_gathered_before_it(write, tmp_path):
    write("train.py", """
        import os
        import torch
        import torch.nn.functional as F
        x = torch.randn(4, 3)
        loss = F.cross_entropy(F.softmax(x, dim=1), torch.tensor([0, 1, 2, 0]))
        os.abort()
    """)
    result = torchlint_run("train.py", "-q", "--output-format", "json", cwd=tmp_path)
    assert result.returncode == 1
    by_code = {f["code"]: f for f in result.findings()}
    assert by_code["TL101"]["status"] == "confirmed"  # the static rule, confirmed before the abort
    assert "SIGABRT" in by_code["TL702"]["message"]


@pytest.mark.slow
def test_megabytes_of_output_do_not_block_the_run(write, tmp_path):
    write("train.py", """
        import sys
        line = "x" * 1023 + "\\n"
        for _ in range(8 * 1024):  # 8 MiB
            sys.stdout.write(line)
        print("the end")
    """)
    result = torchlint_run("train.py", "--output-format", "json", cwd=tmp_path)
    assert result.returncode == 0
    assert result.report["outcome"]["status"] == "completed"
    assert len(result.stderr) > 8 * 1024 * 1024  # forwarded, not swallowed
    assert len(result.stdout) < 10_000  # and never mixed into the report


@pytest.mark.slow
def test_sys_exit_with_an_error_status(write, tmp_path):
    write("train.py", "import sys\nsys.exit(3)\n")
    result = torchlint_run("train.py", "-q", "--output-format", "json", cwd=tmp_path)
    assert result.returncode == 1
    (crash,) = result.findings("runtime only")
    assert crash["code"] == "TL702" and "sys.exit(3)" in crash["message"]
