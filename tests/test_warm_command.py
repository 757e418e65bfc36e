"""The documentation test's `torchlint` command (``warm_command``): a page's command line forked
by the page's warm server prints and exits as a fresh `torchlint` does, a command that would
start differently runs fresh, and a killed command leaves no run behind."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import doc_console  # tests/doc_console.py
import pytest
from process_state import alive  # tests/process_state.py

pytest.importorskip("torch")

# Says whether the server forked it: a fork keeps the server's command line.
PROGRAM = """
import sys
with open(sys.argv[1], "w") as out:
    out.write("served" if b"warm_server" in open("/proc/self/cmdline", "rb").read() else "fresh")
"""

SLEEPER = """
import os, sys, time
open(sys.argv[1], "w").write(str(os.getpid()))
time.sleep(120)
"""

SOURCE = 'import torch\nouter = torch.ger(a, b)\n'


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """A page's scratch folder and environment, with the page's warm server started."""
    home = tmp_path_factory.mktemp("page")
    (home / "work").mkdir()
    (home / "work" / "program.py").write_text(PROGRAM)
    (home / "work" / "sleeper.py").write_text(SLEEPER)
    (home / "work" / "bad.py").write_text(SOURCE)
    env = doc_console.environment(home)
    cold_env = dict(env)  # before the warm `torchlint` goes first on PATH
    with contextlib.ExitStack() as stack:
        start = doc_console.warm_server_starter(home, env, stack)
        assert start is not None, "the venv's torchlint is a console script a server can run"
        start()
        yield home / "work", env, cold_env


def bash(line: str, cwd: Path, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, input=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=120)


def test_a_served_command_prints_and_exits_as_a_fresh_one(page):
    work, env, cold_env = page
    line = 'torchlint check --output-format concise --stdin-filename bad.py -; echo "exit $?"; torchlint rule TL301 | head -3'
    warm = bash(line, work, env, stdin=SOURCE)
    cold = bash(line, work, cold_env, stdin=SOURCE)
    assert "TL502" in warm.stdout and "exit 1" in warm.stdout and "# TL301" in warm.stdout
    assert warm.stdout == cold.stdout


def test_the_page_server_forks_a_run_and_refuses_one_that_would_start_differently(page, tmp_path):
    work, env, _ = page

    def started(line: str) -> str:
        out = tmp_path / "started"
        result = bash(f"{line} program.py -- {out}; echo \"exit $?\"", work, env)
        assert "exit 0" in result.stdout, result.stdout
        return out.read_text()

    assert started("torchlint run -q --device cpu") == "served"
    # PYTHONPATH is read when Python starts: the server started without it.
    assert started("PYTHONPATH=. torchlint run -q --device cpu") == "fresh"
    # Progress lines come in one order however fast the child starts (runner._OutputPump).
    assert started("torchlint run --device cpu") == "served"


def test_a_killed_command_leaves_no_run_behind(page, tmp_path):
    work, env, _ = page
    pidfile = tmp_path / "pid"
    process = subprocess.Popen(["bash", "-c", f"torchlint run -q --device cpu sleeper.py -- {pidfile}"], cwd=work,
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (pidfile.exists() and pidfile.read_text()):
            assert time.monotonic() < deadline and process.poll() is None, "the program never started"
            time.sleep(0.1)
        program = int(pidfile.read_text())
        os.killpg(process.pid, signal.SIGKILL)  # what the docs test does to a command past its timeout
        process.wait(timeout=30)
        deadline = time.monotonic() + 30
        while alive(program):
            assert time.monotonic() < deadline, "the run went on after its command was killed"
            time.sleep(0.1)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)

