"""However `torchlint run` ends (normally, SIGTERM, SIGHUP, SIGKILL), the target, everything it
started (setsid grandchildren included) and torchlint's temporary files are gone afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

from conftest import torchlint_run  # noqa: E402
from process_state import alive  # noqa: E402  (tests/process_state.py)

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux guarantees")]

# The target records its own pid and a grandchild's that left its session (setsid).
SLEEPER = """
import os, subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
with open("pids.tmp", "w") as stream:
    stream.write(f"{os.getpid()} {grandchild.pid}")
os.rename("pids.tmp", "pids")
time.sleep(float(sys.argv[1]))
"""



def _wait_gone(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


def _read_pids(folder: Path, proc: subprocess.Popen, seconds: float = 60) -> list[int]:
    deadline = time.monotonic() + seconds
    while not (folder / "pids").exists():
        assert proc.poll() is None, f"torchlint run ended early: {proc.communicate()}"
        assert time.monotonic() < deadline, "the target never started"
        time.sleep(0.05)
    return [int(p) for p in (folder / "pids").read_text().split()]


def _kill_leftovers(pids: list[int]) -> None:
    for pid in pids:  # only if the test failed: never leave our own sleepers behind
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def sleeper(tmp_path):
    (tmp_path / "tmp").mkdir()
    (tmp_path / "sleeper.py").write_text(SLEEPER)
    return tmp_path


def test_a_setsid_grandchild_does_not_outlive_the_run(sleeper):
    result = torchlint_run("sleeper.py", "-q", "--output-format", "json", "--", "0", cwd=sleeper,
                           env={"TMPDIR": str(sleeper / "tmp")})
    pids = [int(p) for p in (sleeper / "pids").read_text().split()]
    try:
        assert result.report["outcome"]["status"] == "completed"
        assert _wait_gone(pids, 5) == []
        assert list((sleeper / "tmp").iterdir()) == []
    finally:
        _kill_leftovers(pids)


def _start(folder: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "torchlint", "run", "sleeper.py", "-q", "--", "120"], cwd=folder,
                            env=dict(os.environ, TMPDIR=str(folder / "tmp")),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("signo", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_terminating_signal_stops_the_target_and_all_it_started(sleeper, signo):
    proc = _start(sleeper)
    pids: list[int] = []
    try:
        pids = _read_pids(sleeper, proc)
        proc.send_signal(signo)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 128 + signo, err
        if signo == signal.SIGINT:  # a Ctrl-C is the program's: it raised KeyboardInterrupt, as under python
            assert "raised KeyboardInterrupt" in err
        else:
            assert f"torchlint: stopped by {signal.Signals(signo).name}" in err
        assert _wait_gone(pids, 5) == []
        assert list((sleeper / "tmp").iterdir()) == []
    finally:
        proc.kill()
        proc.communicate(timeout=20)
        _kill_leftovers(pids)


def test_the_target_dies_with_a_killed_torchlint(sleeper):
    proc = _start(sleeper)
    pids: list[int] = []
    try:
        pids = _read_pids(sleeper, proc)
        proc.kill()  # SIGKILL: torchlint itself cannot clean up
        proc.communicate(timeout=20)
        assert _wait_gone(pids, 10) == []
    finally:
        proc.kill()
        _kill_leftovers(pids)
