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
def test_a_timeout_names_the_looping_line_with_the_exact_counts(write, tmp_path):
    write("train.py", """
        import subprocess, sys, time
        import torch
        # a grandchild that would outlive a naive kill
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

        def wait_until_small(loss):
            while loss > -1: time.sleep(0.01)

        for step in range(1000):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step == 12:  # past the last progress report (steps 1-10, then every 100th)
                wait_until_small(loss.item())
    """)
    # The run must reach the loop before the timeout: a forked run does in about a second; on a
    # busy machine a run that timed out before it is tried again with a longer timeout.
    for timeout in (3, 15):
        result = torchlint_run("train.py", "-q", "--timeout", str(timeout), "--output-format", "json", cwd=tmp_path)
        if result.returncode == 1 and result.report["outcome"].get("optimizer_steps") == 13:
            break
    assert result.returncode == 1
    (finding,) = result.findings("runtime only")
    assert finding["code"] == "TL703" and finding["location"]["row"] == 9, finding
    assert f"timed out after {timeout} s at train.py:9 `while loss > -1: time.sleep(0.01)` (after 13 optimizer steps " \
           "and 13 forward calls)" in finding["message"]
    outcome = result.report["outcome"]
    assert outcome["status"] == "timed-out" and (outcome["optimizer_steps"], outcome["forward_calls"]) == (13, 13)
    # the user's stack, outermost first, as a traceback lists it
    stack = [(frame[1], frame[2]) for frame in finding["evidence"][0]["data"]["stack"]]
    assert stack == [(17, "<module>"), (9, "wait_until_small")]
    assert result.seconds < timeout + 10


@pytest.mark.slow
def test_a_target_holding_the_interpreter_lock_is_still_placed(write, tmp_path):
    # a C call that holds the GIL (ctypes.PyDLL does not release it): the watchdog thread cannot
    # run, faulthandler's dump says where the main thread was
    write("train.py", """
        import ctypes

        def wait():
            ctypes.PyDLL(None).sleep(600)

        wait()
    """)
    for timeout in (2, 10):  # the longer one only where the first ended before the program reached `wait()`
        result = torchlint_run("train.py", "-q", "--timeout", str(timeout), "--output-format", "json", cwd=tmp_path)
        found = result.findings("runtime only")
        if len(found) == 1 and found[0]["location"]["row"] == 4:
            break
    (finding,) = result.findings("runtime only")
    assert finding["code"] == "TL703" and finding["location"]["row"] == 4, finding
    assert result.seconds < timeout + 10


def test_the_timeout_counts_torchlints_own_start(write, tmp_path):
    # a timeout shorter than importing torch: the run ends on time, and says why (started
    # fresh: a run forked from the warm server has torch imported already)
    write("train.py", "print('never')\n")
    result = torchlint_run("train.py", "-q", "--timeout", "0.3", "--output-format", "json", cwd=tmp_path,
                           env={"TORCHLINT_TEST_COLD": "1"})
    (finding,) = result.findings("runtime only")
    assert finding["code"] == "TL703" and "before the program started" in finding["message"]
    assert "never" not in result.stderr and result.seconds < 0.3 + 8


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
    assert result.returncode == 128 + 6  # the program's own: python dies of SIGABRT too
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
    assert result.returncode == 3  # the program's own status, as under python
    (crash,) = result.findings("runtime only")
    assert crash["code"] == "TL702" and "sys.exit(3)" in crash["message"]
