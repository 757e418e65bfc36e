"""torchlint's own line to the child, beside the program's streams.

The program under `torchlint run` writes to its own stdout and stderr and reads its own stdin:
the descriptors `torchlint run` was given, passed down unchanged, so a terminal stays a
terminal and `> log.txt` or `| tee` see what they see under `python`. What torchlint needs to
say or hear that is not the program's goes through this socket pair instead:

- **the opening handshake**: the child writes its opening progress line ("torchlint: running
  ... under probes") to stderr, says ``OPENED`` here and waits for ``GO`` before the program
  starts. The parent writes its own progress line (the static check's) in between, so the
  lines come in one order however fast either process is. Without progress lines (``-q``) the
  child does not wait.
- **what the interpreter dumps on its own**: faulthandler's stacks (a fatal signal, the
  watchdog's last resort at the deadline) are written here rather than to the program's
  stderr, where `python` would have printed nothing; the parent keeps the tail for the report.

Ranks under `--nproc-per-node` are started by torch's launcher, which passes on no descriptor:
they have no side channel and keep faulthandler on stderr, as before.
"""

from __future__ import annotations

import os
import select
import socket
import threading
import time
from typing import Any

OPENED = b"\x01"
GO = b"\x02"
TAIL_BYTES = 64 * 1024


class ChildSide:
    """The child's end, from the spec's ``side`` settings (None: no side channel)."""

    def __init__(self, settings: dict[str, Any] | None) -> None:
        settings = settings or {}
        fd = settings.get("fd")
        self.waits = bool(settings.get("gate"))
        self._socket: socket.socket | None = None
        if isinstance(fd, int):
            try:
                self._socket = socket.socket(fileno=fd)
            except OSError:
                self._socket = None
        #: A file for faulthandler (it wants a fileno); None without a channel.
        self.dump_file: Any = None
        if self._socket is not None:
            try:
                self.dump_file = os.fdopen(os.dup(self._socket.fileno()), "wb", buffering=0)
            except OSError:
                self.dump_file = None

    def opened(self, deadline: float | None = None) -> None:
        """The opening line is out: let the parent say its own, then go on (at most until
        ``deadline``, on the ``time.monotonic()`` clock, if the parent never answers)."""
        if self._socket is None:
            return
        try:
            if not self.waits:
                return
            self._socket.sendall(OPENED)
            while True:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                ready, _, _ = select.select([self._socket], [], [], remaining)
                if not ready:
                    return  # the watchdog ends the run at the deadline
                data = self._socket.recv(16)
                if not data or GO in data:
                    return
        except OSError:
            return  # the parent is gone: the supervisor ends us
        finally:
            # The gate was all this end was for (faulthandler writes through its own duplicate):
            # closed now, it cannot be collected at exit with a ResourceWarning in the program's
            # stderr, where a program that turned warnings on would see it.
            self._socket.close()
            self._socket = None


class ParentSide(threading.Thread):
    """The parent's end: hears the child's ``OPENED``, writes our progress lines after it, says
    ``GO`` once ``release()`` is called, and keeps the tail of what faulthandler dumps."""

    def __init__(self, sink: Any, gate: bool) -> None:
        super().__init__(daemon=True, name="torchlint-side-channel")
        self._ours, self.child_socket = socket.socketpair()
        self.gate = gate
        self.tail = bytearray()
        self._sink = sink  # where our progress lines go (stderr); None: nowhere
        self._lock = threading.Lock()
        self._opened = False
        self._released = False
        self._said_go = False
        self._lines: list[str] = []

    def child_settings(self) -> dict[str, Any]:
        return {"fd": self.child_socket.fileno(), "gate": self.gate}

    def child_started(self) -> None:
        """The child holds its end now; ours must go, or the socket never ends."""
        self.child_socket.close()
        self.start()

    def say_after_opening(self, line: str) -> None:
        with self._lock:
            self._lines.append(line)
            self._flush()

    def release(self) -> None:
        """Our lines are said: the program may start."""
        with self._lock:
            self._released = True
            self._flush()

    def open_now(self) -> None:
        """The child is gone, or we stop waiting for it: say what is waiting."""
        with self._lock:
            self._opened = self._released = True
            self._flush()

    def run(self) -> None:
        while True:
            try:
                chunk = self._ours.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            if not self._opened and OPENED in chunk:
                before, _, chunk = chunk.partition(OPENED)
                self._keep(before)
                with self._lock:
                    self._opened = True
                    self._flush()
            self._keep(chunk)
        self.open_now()
        try:
            self._ours.close()
        except OSError:
            pass

    def close(self) -> None:
        for end in (self._ours, self.child_socket):
            try:
                end.close()
            except OSError:
                pass

    def _keep(self, data: bytes) -> None:
        if data:
            self.tail += data
            del self.tail[:-TAIL_BYTES]

    def _flush(self) -> None:
        if not self._opened:
            return
        for line in self._lines:
            self._write(line)
        self._lines.clear()
        if self._released and not self._said_go:
            self._said_go = True
            try:
                self._ours.sendall(GO)
            except OSError:
                pass

    def _write(self, line: str) -> None:
        if self._sink is None:
            return
        try:
            self._sink.write(line)
            self._sink.flush()
        except (OSError, ValueError):
            self._sink = None
