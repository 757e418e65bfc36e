"""``python -m torchlint.runtime.parent.supervisor --parent PID [--pass-fd N] -- CHILD COMMAND``

A small process between `torchlint run` and the child, so that nothing the target starts
outlives the run. It is a child subreaper (setsid grandchildren that lose their parent are
re-parented here, not to init), which is process-wide and so not something to make of the
`torchlint` process itself. When the child ends, or on SIGTERM/SIGHUP/SIGINT/SIGQUIT (from
`torchlint run`, or from the kernel when `torchlint run` dies: PR_SET_PDEATHSIG), it kills the
child's process group and then every descendant left, and exits as the child did (same
status, or the same signal) so the parent can tell a crash from a clean exit.

Imports nothing heavy: it starts before the child on every run.
"""

from __future__ import annotations

import os
import resource
import signal
import sys
import time

from torchlint.runtime.child_env import ENV_PARENT
from torchlint.runtime.lifetime import adopt_orphans, die_with_parent, kill_descendants, reap_children
from torchlint.runtime.parent import warm_start

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)
TERMINATE_GRACE_S = 2.0


class _Stop(Exception):
    pass


class _StopSignals:
    """Notes a stop signal at any time; raises it into the wait only once the child's pid is
    known, so that no signal can leave a started child behind."""

    def __init__(self) -> None:
        self.armed = False
        self.received: int | None = None
        #: The child's pid once started: a SIGINT is passed on to its process group.
        self.child: int | None = None
        for signo in STOP_SIGNALS:
            signal.signal(signo, self._on_signal)

    def _on_signal(self, signo: int, frame: object) -> None:
        if signo == signal.SIGINT and self.child is not None:
            try:
                os.killpg(self.child, signal.SIGINT)
            except (ProcessLookupError, PermissionError):
                pass
            return
        self.received = signo
        if self.armed:
            self.armed = False  # one stop is enough: the cleanup must not be interrupted
            raise _Stop(signo)


def main(argv: list[str]) -> int:
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1:]
    parent = int(options[options.index("--parent") + 1])
    pass_fds = tuple(int(options[i + 1]) for i, option in enumerate(options) if option == "--pass-fd")
    stops = _StopSignals()
    if not die_with_parent(signal.SIGTERM, parent):
        return 1  # `torchlint run` died before the kernel could tell us
    adopt_orphans()
    if stops.received is not None:
        return 1
    # A session of its own, so that its whole process group can be killed but not us with it.
    child = warm_start.popen(command, pass_fds=pass_fds, start_new_session=True,
                             env=dict(os.environ, **{ENV_PARENT: str(os.getpid())}))
    stops.child = child.pid
    for fd in pass_fds:
        os.close(fd)  # the child holds them; the parent must see the end of the pipe when it exits
    status = None
    try:
        stops.armed = True
        if stops.received is not None:
            raise _Stop(stops.received)
        status = _wait_for(child.pid)
        stops.armed = False
    except _Stop:
        if status is None:
            status = _terminate(child.pid)
    child.returncode = 0  # reaped here, not by Popen
    try:
        os.killpg(child.pid, signal.SIGKILL)  # what the target left in its group
    except (ProcessLookupError, PermissionError):
        pass
    kill_descendants()
    return _relay(status)


def _wait_for(pid: int, deadline: float | None = None) -> int | None:
    """The child's wait status, reaping any adopted orphan that ends meanwhile."""
    while True:
        if deadline is None:
            try:
                ended, status = os.waitpid(-1, 0)
            except ChildProcessError:
                return None
            if ended == pid:
                return status
            continue
        for ended, status in reap_children():
            if ended == pid:
                return status
        if time.monotonic() > deadline:
            return None
        time.sleep(0.02)


def _terminate(pid: int) -> int | None:
    for signo, grace in ((signal.SIGTERM, TERMINATE_GRACE_S), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, signo)
        except (ProcessLookupError, PermissionError):
            pass
        status = _wait_for(pid, time.monotonic() + grace)
        if status is not None:
            return status
    return None


def _relay(status: int | None) -> int:
    if status is None:
        return 1
    if os.WIFSIGNALED(status):
        signo = os.WTERMSIG(status)
        sys.stdout.flush()
        # Die of the same signal, without a core file of our own.
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(signo, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signo})
        os.kill(os.getpid(), signo)
        return 128 + signo
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
