"""`torchlint run` says how its static check went after the child's opening line and before the
program's first output, whichever of the two processes gets there first: the child says it
opened and waits for the parent's go (``runtime.side_channel``)."""

from __future__ import annotations

import io
import threading
import time

from torchlint.runtime.side_channel import ChildSide, ParentSide

STATIC = "torchlint: static check: 0 finding(s) in 1 file(s): train.py and the files it imports\n"


def _pair(gate: bool = True) -> tuple[ParentSide, ChildSide, io.StringIO]:
    sink = io.StringIO()
    parent = ParentSide(sink, gate=gate)
    child = ChildSide(parent.child_settings() | {"fd": _dup(parent)})
    parent.child_started()
    return parent, child, sink


def _dup(parent: ParentSide) -> int:
    import os

    return os.dup(parent.child_socket.fileno())  # the child process's own copy of its end


def _opened_in_thread(child: ChildSide) -> threading.Thread:
    thread = threading.Thread(target=child.opened, args=(time.monotonic() + 30,), daemon=True)
    thread.start()
    return thread


def test_the_child_waits_for_the_static_line_that_ends_later():
    parent, child, sink = _pair()
    opened = _opened_in_thread(child)
    opened.join(timeout=0.3)
    assert opened.is_alive()  # the program has not started: the static check is still running
    parent.say_after_opening(STATIC)
    parent.release()
    opened.join(timeout=10)
    assert not opened.is_alive()
    assert sink.getvalue() == STATIC


def test_a_static_line_said_first_waits_for_the_opening():
    parent, child, sink = _pair()
    parent.say_after_opening(STATIC)  # the static check finished before the child imported torch
    parent.release()
    time.sleep(0.05)
    assert sink.getvalue() == ""  # the child's opening line has not been written yet
    opened = _opened_in_thread(child)
    opened.join(timeout=10)
    assert not opened.is_alive()
    for _ in range(1000):
        if sink.getvalue():
            break
        time.sleep(0.01)
    assert sink.getvalue() == STATIC


def test_a_child_that_never_opens_still_gets_the_line_when_it_ends():
    parent, child, sink = _pair()
    parent.say_after_opening(STATIC)
    parent.release()
    child.dump_file.write(b"Fatal Python error: Segmentation fault\n")
    child._socket.close()
    child.dump_file.close()
    parent.join(timeout=10)
    assert sink.getvalue() == STATIC
    assert bytes(parent.tail) == b"Fatal Python error: Segmentation fault\n"  # faulthandler's dump, for the report


def test_a_child_without_a_gate_does_not_wait():
    parent, child, sink = _pair(gate=False)
    started = time.monotonic()
    child.opened(time.monotonic() + 30)
    assert time.monotonic() - started < 5


def test_a_child_whose_parent_is_gone_goes_on():
    parent, child, _ = _pair()
    parent.close()
    started = time.monotonic()
    child.opened(time.monotonic() + 30)
    assert time.monotonic() - started < 5
