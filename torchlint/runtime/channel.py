"""The evidence channel from the child to the parent, built to survive the target.

A file in a temporary folder did not: a target that cleans its temp folders deleted it, and
one that closed inherited descriptors (``os.closerange(3, ...)``) had our events written into
its own file opened on the reused number, so a crash read as a clean run. Now:

* The main route is a pipe. The child moves its end far from the low numbers a program
  reuses, and before each write checks with ``fstat`` that the number still names *our* pipe
  (same device and inode); a closed or reused number is never written to.
* The second route (Linux) is an abstract unix socket: it has no file a program can delete,
  its name is random, and the parent accepts only peers of its own user. The child connects
  when the pipe is gone; a forked process (a DataLoader worker) connects on its own, so its
  large events never interleave with the parent's in the pipe.
* Whatever is lost, the parent notices: no ``outcome`` event never reads as success.

The parent drains every route with threads, so a full pipe never blocks the target.
"""

from __future__ import annotations

import fcntl
import os
import resource
import secrets
import socket
import struct
import sys
import threading
from typing import Any

from torchlint.runtime.events import EventWriter, parse_events

HAS_ABSTRACT_SOCKETS = sys.platform.startswith("linux")
READ_CHUNK = 65536


class EvidenceChannel:
    """Parent side: the pipe, the fallback socket, and the threads that drain them."""

    def __init__(self, *, read_now: bool = True) -> None:
        """``read_now=False``: the reader threads start with ``child_started()``, so that
        the process that starts the child has one thread until then (``warm_start`` forks it)."""
        self._read_fd, self.child_fd = os.pipe()
        self._routes: list[bytearray] = [bytearray()]  # the pipe, then each connection in accept order
        self._lock = threading.Lock()
        self._readers: list[threading.Thread] = []
        self._closing = threading.Event()
        self.socket_name: str | None = None
        self._listener: socket.socket | None = None
        if HAS_ABSTRACT_SOCKETS:
            self.socket_name = f"torchlint-run-{secrets.token_hex(16)}"
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(b"\0" + self.socket_name.encode())
            listener.listen(64)
            listener.settimeout(0.1)
            self._listener = listener
        self._reading = False
        if read_now:
            self._start_reading()

    def child_settings(self) -> dict[str, Any]:
        return {"fd": self.child_fd, "socket": self.socket_name}

    def child_started(self) -> None:
        """The child holds the write end now; ours must go, or the pipe never ends."""
        os.close(self.child_fd)
        self._start_reading()

    def collect(self, wait: float = 5.0) -> list[dict[str, Any]]:
        """Every event received, once the child and its processes have ended (or ``wait`` s)."""
        self._readers[0].join(timeout=wait)
        self._closing.set()
        if self._listener is not None:
            self._accepter.join(timeout=wait)  # first: it may still start readers
        for reader in list(self._readers[1:]):
            reader.join(timeout=wait)
        with self._lock:
            routes = [bytes(route) for route in self._routes]
        return [event for route in routes for event in parse_events(route)]

    def received(self) -> list[bytes]:
        """What each route has brought so far (the pipe first), while the child still runs:
        for watching a run live (``runtime.distributed.monitor``)."""
        with self._lock:
            return [bytes(route) for route in self._routes]

    def close(self) -> None:
        self._closing.set()
        if self._listener is not None:
            self._listener.close()

    # -- reader threads -----------------------------------------------------------------------
    def _start_reading(self) -> None:
        if self._reading:
            return
        self._reading = True
        self._start(self._drain_pipe, "torchlint-run-evidence")
        if self._listener is not None:
            self._accepter = self._start(self._accept, "torchlint-run-evidence-accept")

    def _start(self, target: Any, name: str, *args: Any) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._readers.append(thread)
        thread.start()
        return thread

    def _drain_pipe(self) -> None:
        try:
            while chunk := os.read(self._read_fd, READ_CHUNK):
                with self._lock:
                    self._routes[0] += chunk
        finally:
            os.close(self._read_fd)

    def _accept(self) -> None:
        assert self._listener is not None
        while True:
            # Once closing, connections already made (and their data) still wait in the backlog:
            # accept them all; only an empty wait after closing ends the loop.
            closing = self._closing.is_set()
            try:
                connection, _ = self._listener.accept()
            except socket.timeout:  # TimeoutError from 3.10 on, an OSError before
                if closing:
                    return
                continue
            except OSError:
                return
            if not _same_user(connection):
                connection.close()
                continue
            connection.settimeout(None)
            with self._lock:
                self._routes.append(bytearray())
                index = len(self._routes) - 1
            self._start(self._drain_connection, "torchlint-run-evidence-connection", connection, index)

    def _drain_connection(self, connection: socket.socket, index: int) -> None:
        with connection:
            while True:
                try:
                    chunk = connection.recv(READ_CHUNK)
                except OSError:
                    return
                if not chunk:
                    return
                with self._lock:
                    self._routes[index] += chunk


def _same_user(connection: socket.socket) -> bool:
    try:
        _, uid, _ = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    except (OSError, AttributeError):
        return False
    return uid == os.getuid()


class ChannelWriter(EventWriter):
    """Child side. Never raises into the target: a channel that cannot be written is dropped,
    and the parent reports the evidence it did not get as lost, not as a clean run."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self._socket_name: str | None = settings.get("socket")
        self._owner = os.getpid()
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._identity: tuple[int, int] | None = None
        self._adopt(settings.get("fd"))
        os.register_at_fork(after_in_child=self._after_fork)

    def _write(self, data: bytes) -> None:
        with self._lock:
            for _ in range(3):  # the pipe, then a connection; a third try if that one was lost too
                fd = self._usable_fd()
                if fd is None:
                    return
                try:
                    _write_all(fd, data)
                    return
                except OSError:
                    self._forget()

    def close(self) -> None:
        with self._lock:
            if self._fd is not None and self._is_ours(self._fd):
                os.close(self._fd)
            self._forget()

    # -- keeping hold of our descriptor -------------------------------------------------------
    def _usable_fd(self) -> int | None:
        if self._fd is not None and self._is_ours(self._fd):
            return self._fd
        self._forget()  # closed, or the number now names someone else's file: never write there
        self._adopt(_connect(self._socket_name))
        return self._fd

    def _is_ours(self, fd: int) -> bool:
        try:
            stat = os.fstat(fd)
        except OSError:
            return False
        return (stat.st_dev, stat.st_ino) == self._identity

    def _adopt(self, fd: int | None) -> None:
        if fd is None:
            return
        try:
            high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _high_base())
        except OSError:
            high = fd
        else:
            os.close(fd)
        try:
            stat = os.fstat(high)
        except OSError:
            return
        self._fd, self._identity = high, (stat.st_dev, stat.st_ino)

    def _forget(self) -> None:
        self._fd, self._identity = None, None

    def _after_fork(self) -> None:
        # A forked process (DataLoader worker) writes through a connection of its own, and the
        # lock another thread may have held at the fork is replaced.
        self._lock = threading.Lock()
        if self._owner != os.getpid() and self._socket_name is not None:
            self._owner = os.getpid()
            self._forget()


def _connect(name: str | None) -> int | None:
    if name is None:
        return None
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect(b"\0" + name.encode())
    except OSError:
        client.close()
        return None
    return client.detach()


def _high_base() -> int:
    """Near the top of the descriptor table: programs reuse and close the low numbers."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 65536
    return max(3, min(soft, 65536) - 64)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
