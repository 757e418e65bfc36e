"""kill -9 during --fix, bounded (tests/kill_fix.py): a few SIGKILLs at random moments of a
run over a tree of fixable files; every file is its original or its fixed bytes, and what a
killed write leaves (a hidden temp file of a dead process) is removed by the next write."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest

from kill_fix import KillFigures, fixed_bytes, fresh_tree, kill_runs
from torchlint.atomic import write_atomic

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL and the temp sweep are POSIX")


def test_files_are_whole_after_kill_9_and_temp_files_do_not_stay(tmp_path):
    root, originals = fresh_tree(tmp_path, 40)
    fixed, took = fixed_bytes(root, originals)
    root, originals = fresh_tree(tmp_path, 40)
    figures = KillFigures()
    kill_runs(root, originals, fixed, took, kills=5, rnd=random.Random(9), figures=figures)
    assert figures.kills == 5
    assert figures.problems == []


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_write_removes_temp_files_of_dead_writers_only(tmp_path):
    dead = tmp_path / f".a.py.torchlint-{_dead_pid()}-x1.tmp"
    mine = tmp_path / f".b.py.torchlint-{os.getpid()}-x2.tmp"
    foreign = tmp_path / ".c.py.x3.tmp"  # not ours: never touched
    for path in (dead, mine, foreign):
        path.write_text("partial")
    write_atomic(tmp_path / "a.py", "x = 1\n")
    assert (tmp_path / "a.py").read_text() == "x = 1\n"
    assert not dead.exists() and mine.exists() and foreign.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([".c.py.x3.tmp", mine.name, "a.py"])
