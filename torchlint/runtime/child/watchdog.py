"""The child's own timeout: where the target was when time ran out; child process only.

`torchlint run` gives the child an absolute deadline (``time.monotonic()`` is one clock for
every process on Linux and macOS), taken before any work of torchlint's own, so the static
check and the torch import count against ``--timeout`` as the user's wall clock does. The
watchdog is started first thing in the child, before torch is imported. At the deadline its
thread reads the target's stack (``sys._current_frames``) and the step counter, sends one
``timed-out`` event with the user line, the user frames and the exact counts, prints the
stack as Python prints a traceback, and ends the process at once (so the counts are the
last ones). Nothing of the target runs between the reading and the end: the counters move
only in Python hooks, which need the interpreter lock the watchdog holds.

A target stuck in C code that holds the interpreter lock never lets the thread run:
``faulthandler`` then dumps every thread's stack to stderr a second later and exits, and the
parent reads the main thread's user line from that dump (``runtime.merge.faulthandler_dump``).
"""

from __future__ import annotations

import faulthandler
import linecache
import os
import sys
import threading
import time
from typing import Any

#: How long after the deadline faulthandler dumps and exits when the watchdog could not run.
FAULTHANDLER_AFTER_S = 1.0
#: How long after the deadline the parent kills the child itself.
PARENT_GRACE_S = 3.0
EXIT_TIMED_OUT = 124  # as coreutils' timeout
MAX_FRAMES = 20

SETUP, TARGET, AFTER_RUN, EXITING = "setup", "target", "after-run", "exiting"


class Watchdog:
    def __init__(self, deadline: float, events: Any, dump_file: Any = None) -> None:
        self.deadline = deadline
        #: Where faulthandler's last-resort dump goes: the side channel, else stderr.
        self.dump_file = dump_file
        self.events = events
        self.phase = SETUP
        self.counter: Any = None  # the StepCounter, once there is one
        self.frames: Any = None  # the FrameClassifier, once torch is imported
        self.started = time.monotonic()
        self._main = threading.main_thread().ident
        self._exit = os._exit  # the real one: the child replaces os._exit while the target runs
        self._thread = threading.Thread(target=self._wait, name="torchlint-watchdog", daemon=True)
        #: Seconds to stay alive after reporting: a rank's exit makes torch's launcher stop the
        #: other ranks at once, before their own watchdogs (same deadline) could report.
        self.linger = 0.0

    def start(self) -> None:
        remaining = max(0.0, self.deadline - time.monotonic())
        try:
            # Not cancelled in forked processes (DataLoader workers): there the watchdog thread does
            # not exist, and cancelling waits for it forever.
            faulthandler.dump_traceback_later(remaining + FAULTHANDLER_AFTER_S, exit=True,
                                              file=self.dump_file or sys.__stderr__)
        except (ValueError, RuntimeError, AttributeError, OSError, OverflowError):
            pass  # no usable stderr, or a timeout beyond its clock: the parent's kill is the fallback
        self._thread.start()

    def _wait(self) -> None:
        while True:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                break
            time.sleep(min(remaining, 1.0))
        try:
            self._report()
            if self.linger:
                faulthandler.cancel_dump_traceback_later()  # reported: no dump needed while lingering
                time.sleep(self.linger)
        finally:
            self._exit(EXIT_TIMED_OUT)

    def _report(self) -> None:
        frame = sys._current_frames().get(self._main)
        stack = self._user_stack(frame)
        counts = self.counter.as_dict() if self.counter is not None else {"optimizer_steps": 0, "forward_calls": 0}
        threads = self._threads_keeping_alive() if self.phase == EXITING else []
        at = stack[-1][:2] if stack else (threads[0]["at"] if threads else None)
        # Where it was first: listing the imported files can take longer than faulthandler waits
        # on a loaded machine.
        self.events.emit("timed-out", phase=self.phase, at=at, stack=stack, threads=threads,
                         seconds=round(time.monotonic() - self.started, 3), **counts)
        if self.frames is not None and self.phase == TARGET:
            from torchlint.runtime.child.imported_files import imported_files

            self.events.emit("imported", files=imported_files(self.frames))
        stream = sys.__stderr__
        if stream is None:
            return
        lines = ["torchlint: timed out; the program was at (most recent call last):\n"]
        for path, line, function, source in stack:
            lines.append(f'  File "{path}", line {line}, in {function}\n')
            if source:
                lines.append(f"    {source}\n")
        for thread in threads:
            lines.append(f"  thread {thread['name']!r} at {thread['at'][0]}:{thread['at'][1]}\n")
        try:
            stream.write("".join(lines) if stack or threads else f"torchlint: timed out during {self.phase}\n")
            stream.flush()
        except (OSError, ValueError):
            pass

    def _user_stack(self, frame: Any) -> list[list]:
        """The user's frames on the stack, outermost first (as a traceback lists them)."""
        if frame is None or self.frames is None:
            return []
        from torchlint.runtime.frames import USER

        found = []
        while frame is not None and len(found) < MAX_FRAMES:
            filename = frame.f_code.co_filename
            if self.frames.verdict(filename) == USER:
                path = os.path.abspath(filename)
                found.append([path, frame.f_lineno, frame.f_code.co_name, linecache.getline(path, frame.f_lineno).strip()])
            frame = frame.f_back
        return found[::-1]

    def _threads_keeping_alive(self) -> list[dict]:
        """Non-daemon threads still running after the target: what keeps the process alive."""
        frames = sys._current_frames()
        alive = []
        for thread in threading.enumerate():
            if thread.daemon or thread is threading.main_thread() or thread.ident not in frames:
                continue
            stack = self._user_stack(frames[thread.ident])
            if stack:
                alive.append({"name": thread.name, "at": stack[-1][:2]})
        return alive
