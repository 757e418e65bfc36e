"""Tying processes' lifetimes together: die with a parent, adopt orphans, kill descendants.

Linux only (``prctl`` and ``/proc``); elsewhere each function does nothing and says so by its
return value, and `torchlint run` falls back to killing the target's process group.
"""

from __future__ import annotations

import os
import signal
import sys
import time

IS_LINUX = sys.platform.startswith("linux")
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> bool:
    if not IS_LINUX:
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(signo: int, expected_parent: int | None) -> bool:
    """Have the kernel send ``signo`` to this process when its parent dies. Returns False when
    the parent is already gone (it died before the request could take effect) and the caller
    must exit on its own; True otherwise (also where the kernel cannot do it).

    The kernel's "parent" is the *thread* that started this process: a process started from
    a thread that ends before it is signalled then. torchlint's own processes are started
    from their parent's main thread; a parent that may start one from another thread
    watches it through a pidfd instead (``warm_server.serve``)."""
    if not _prctl(PR_SET_PDEATHSIG, signo):
        return True
    return expected_parent is None or os.getppid() == expected_parent


def adopt_orphans() -> bool:
    """Become a child subreaper: descendants orphaned by their parents (setsid daemons) are
    re-parented to this process instead of init, so they can be found and killed."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process we can see."""
    parents = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return parents
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stream:
                fields = stream.read().rsplit(b")", 1)[1].split()  # the name in parentheses may hold spaces
        except (OSError, IndexError):
            continue
        parents[int(name)] = int(fields[1])
    return parents


def descendants(root: int) -> list[int]:
    parents = _parents()
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    found, todo = [], list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def reap_children() -> list[tuple[int, int]]:
    """(pid, wait status) of every child of ours that has ended, without blocking."""
    reaped = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped.append((pid, status))


def kill_descendants(seconds: float = 5.0) -> list[tuple[int, int]]:
    """SIGKILL every descendant of this process until none is left (or ``seconds`` pass):
    processes forked while we kill, and orphans re-parented to us, are caught by the next
    round. Returns the children reaped on the way."""
    if not IS_LINUX:
        return reap_children()
    me = os.getpid()
    reaped: list[tuple[int, int]] = []
    deadline = time.monotonic() + seconds
    while True:
        reaped += reap_children()
        left = descendants(me)
        if not left or time.monotonic() > deadline:
            return reaped
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)
