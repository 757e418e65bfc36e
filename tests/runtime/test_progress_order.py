"""`torchlint run` says how its static check went after the child's opening line and before the
program's output, whichever of the two processes gets there first
(``runtime.parent.runner._OutputPump``)."""

from __future__ import annotations

import io
import os
import sys

import pytest

from torchlint.runtime.parent.runner import _OutputPump

OPENING = b"torchlint: running train.py on cpu under probes: device, loss\n"
STATIC = "torchlint: static check: 0 finding(s) in 1 file(s): train.py and the files it imports\n"


class _Stderr:
    def __init__(self) -> None:
        self.buffer = io.BytesIO()


def _pump(monkeypatch) -> tuple[_OutputPump, int, _Stderr]:
    stderr = _Stderr()
    monkeypatch.setattr(sys, "stderr", stderr)
    read_end, write_end = os.pipe()
    pump = _OutputPump(os.fdopen(read_end, "rb"), forward=True, hold=True)
    pump.start()
    return pump, write_end, stderr


def _finish(pump: _OutputPump, write_end: int, stderr: _Stderr) -> bytes:
    os.close(write_end)
    pump.join(timeout=10)
    assert not pump.is_alive()
    return stderr.buffer.getvalue()


@pytest.mark.parametrize("chunks", [
    [b"a warning torch printed\n" + OPENING + b"the program's output\n"],  # one read
    [b"a warning torch printed\n", OPENING[:20], OPENING[20:] + b"the program's output\n"],  # line cut across reads
])
def test_the_static_line_said_first_comes_right_after_the_childs_opening_line(monkeypatch, chunks):
    pump, write_end, stderr = _pump(monkeypatch)
    pump.say_after_opening(STATIC)  # the static check finished before the child imported torch
    pump.release()
    for chunk in chunks:
        os.write(write_end, chunk)
    out = _finish(pump, write_end, stderr)
    assert out == b"a warning torch printed\n" + OPENING + STATIC.encode() + b"the program's output\n"


def test_the_programs_output_waits_for_a_static_check_that_ends_later(monkeypatch):
    pump, write_end, stderr = _pump(monkeypatch)
    os.write(write_end, OPENING + b"the program's output\n")
    for _ in range(1000):  # the pump forwards the opening line within 10 s
        if OPENING in stderr.buffer.getvalue():
            break
        pump.join(timeout=0.01)
    assert stderr.buffer.getvalue() == OPENING  # the program's line waits
    pump.say_after_opening(STATIC)
    pump.release()
    os.write(write_end, b"step 1\n")
    assert _finish(pump, write_end, stderr) == OPENING + STATIC.encode() + b"the program's output\nstep 1\n"


def test_a_child_that_never_opens_still_gets_the_line_when_its_output_ends(monkeypatch):
    pump, write_end, stderr = _pump(monkeypatch)
    pump.say_after_opening(STATIC)
    pump.release()
    os.write(write_end, b"Traceback (most recent call last):\nImportError: no torch\n")
    assert _finish(pump, write_end, stderr) == b"Traceback (most recent call last):\nImportError: no torch\n" + STATIC.encode()


def test_ranks_open_with_their_label(monkeypatch):
    pump, write_end, stderr = _pump(monkeypatch)
    pump.say_after_opening(STATIC)
    pump.release()
    os.write(write_end, b"torchlint (rank 1): running train.py on cpu under probes: device\nrank output\n")
    out = _finish(pump, write_end, stderr)
    assert out == b"torchlint (rank 1): running train.py on cpu under probes: device\n" + STATIC.encode() + b"rank output\n"


def test_a_quiet_run_holds_nothing_back(monkeypatch):
    stderr = _Stderr()
    monkeypatch.setattr(sys, "stderr", stderr)
    read_end, write_end = os.pipe()
    pump = _OutputPump(os.fdopen(read_end, "rb"), forward=False, hold=True)
    pump.start()
    os.write(write_end, OPENING + b"x" * 100_000)
    out = _finish(pump, write_end, stderr)
    assert out == b"" and bytes(pump.tail).endswith(b"x" * 1000) and len(pump._held) == 0
