"""A process that holds torch and torchlint and forks `torchlint` command lines on request.

Each `torchlint run` spends about 2 CPU-seconds starting interpreters and importing torch,
a program that makes an optimizer 1.3 more importing Dynamo, and one that compiles with
Inductor 3 more before its first kernel (a server started with ``compiles`` does that once).
The test suite runs some two hundred of them; with a ``WarmServer`` per worker each is a fork
of a process that imported everything once (``warm_start`` explains what a fork keeps the
same). The server forks one command line at a time, in its own session, with the caller's
working folder, environment and output pipes, and answers its pid and then its exit status.

A caller whose environment differs from the server's in anything but ``LATE_READ`` runs the
command itself: torch and Python read the rest of the environment when they start, and the
server started long ago.

A caller that is not Python (the documentation test's ``torchlint`` command, a few lines of
plain Python in front of a shell) speaks to the socket directly. Its request may also carry:

- a third descriptor, the run's stdin (else ``/dev/null``);
- ``"script"``: the console script to run as ``__main__`` (as ``python SCRIPT ARGV`` would)
  instead of ``python -m torchlint``;
- ``"same_start": true``: the server answers ``{"refused": why}`` instead of a pid where the
  caller's environment would start differently (``serves``), and the caller runs it itself;
- ``"end_with_caller": true``: the server kills the run's process group if the caller's
  connection closes before the run ends (the caller was killed: no orphan runs on).
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: Variables read when they are used, not when torch or torchlint are imported: a caller may
#: set them differently from the server's start.
LATE_READ = ("TORCHINDUCTOR_CACHE_DIR", "NO_COLOR", "TERM", "COLUMNS", "PYTEST_CURRENT_TEST",
             # What a shell sets for each command it starts; neither Python nor torch reads it.
             "PWD", "OLDPWD", "SHLVL", "_",
             # Inductor writes this into its own process's environment (an address in that
             # process) before it loads each compiled kernel, and reads it only then: a caller
             # that once compiled in process carries it, and differs from the server in
             # nothing torch starts with.
             "_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR")
LATE_READ_PREFIXES = ("TORCHLINT_",)
START_TIMEOUT_S = 120.0
_PARENT = "parent"  # the selector's key for the parent's pidfd
_HEADER = struct.Struct("!I")


# ------------------------------------------------------------------------------ the server

def serve(address: str, parent: int, compiles: bool = False) -> None:
    """Import what a run needs, then fork each request's command line until the parent ends.
    ``compiles``: also do what a run that compiles with Inductor does first (``_warm_inductor``)."""
    # The parent process is watched through a pidfd, not PR_SET_PDEATHSIG: the kernel sends
    # that signal when the *thread* that started the server ends, and a test whose first run
    # came from a thread pool lost its server when the pool shut down.
    started_with = dict(os.environ)  # before any import can add to it
    if not hasattr(os, "pidfd_open"):
        return  # the caller reads no "ready" and starts its runs itself
    try:
        parent_end = os.pidfd_open(parent)
    except OSError:
        return  # the parent is gone already
    if os.getppid() != parent:
        return  # ... and its pid was reused
    import torch  # noqa: F401  (the point of the server)
    # An optimizer's constructor imports Dynamo (torch._compile): 1.3 CPU-s of every run that
    # trains, most of a small program's own cost. A run that makes no optimizer and compiles
    # nothing finds it imported, as it finds torchlint's own modules.
    import torch._dynamo  # noqa: F401
    if compiles:
        _warm_inductor()

    _import_what_runs_use()
    _no_operator_cleanup_at_exit()
    from torchlint.runtime.parent import warm_start

    warm_start.enable()
    # What the server holds stays out of the forks' collections (a full one walked it all, and
    # touching the objects copied their pages), as it does out of its own.
    from torchlint.static.frozen_tree import freeze_for_the_process

    freeze_for_the_process()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(8)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    # Runs overlap (a test may start two at once): each run's end is a pidfd to wait on.
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    selector.register(parent_end, selectors.EVENT_READ, _PARENT)
    while True:
        for key, _ in selector.select():
            if key.data is None:
                _start_one(listener, selector, started_with)
            elif key.data is _PARENT:
                return  # the parent ended: so does the server (runs under way go on alone)
            elif isinstance(key.data, _Caller):
                _caller_left(key, selector)
            else:
                _answer_end(key, selector)


def _import_what_runs_use() -> None:
    """What the three processes of a run import and resolve each time unless the server did
    (with the two steps after it in ``serve``, a forked run of a small training program went
    from 0.68 to 0.21 CPU-s). Not the modules they run as __main__ (runpy warns of a module
    it runs that is already imported)."""
    import torchlint.cli  # noqa: F401
    import torchlint.runtime.child.imported_files  # noqa: F401
    import torchlint.runtime.child.probing  # noqa: F401
    import torchlint.runtime.child.processes  # noqa: F401
    import torchlint.runtime.child.steps  # noqa: F401
    import torchlint.runtime.child.user_warnings  # noqa: F401
    import torchlint.runtime.child.watchdog  # noqa: F401
    import torchlint.runtime.compile.regions  # noqa: F401
    import torchlint.runtime.devices.modes  # noqa: F401
    import torchlint.runtime.distributed.rank  # noqa: F401
    import torchlint.runtime.parent.pipeline  # noqa: F401
    import torchlint.runtime.parent.runner  # noqa: F401
    import torchlint.runtime.report.sections  # noqa: F401
    import torchlint.runtime.report.text  # noqa: F401
    import torchlint.session  # noqa: F401
    import torchlint.static.engine  # noqa: F401
    import torchlint.static.rules_run  # noqa: F401
    from torchlint import lazy
    from torchlint.pluginmanager import make_plugin_manager, rule_registry
    from torchlint.runtime import frames

    plugins = make_plugin_manager()
    rule_registry(plugins)  # the parent's static check: every rule module
    plugins.hook.torchlint_probes()  # the child: every probe's module
    # The rules' import leaves libcst unexecuted; every run's parent parses its target.
    lazy.load("libcst").parse_module("")
    frames.remember_loaded_modules()  # the child's verdict on each module's file


def _no_operator_cleanup_at_exit() -> None:
    """torch registers a finalizer per operator library it loads, run at interpreter exit to
    deregister its operators: 35 ms for a process about to end, in each of a forked run's three
    processes (a fresh run's parent and supervisor never import torch). Forks leave them out;
    libraries a run loads itself keep theirs."""
    import weakref

    import torch.library

    for finalizer, info in list(getattr(weakref.finalize, "_registry", {}).items()):
        if getattr(info, "func", None) is torch.library._del_library:
            finalizer.atexit = False


def _warm_inductor() -> None:
    """What every run that compiles with Inductor on the CPU does first, done once here:
    importing Inductor (1.7 CPU-s) and, before its first kernel loads, building and
    dlopening a probe library for each vector ISA the CPU claims (1.3 s of g++ and Python
    processes; torch caches the answer for the life of the process, so forks inherit it).
    Worth its 3 CPU-s to a server that will fork more than one such run."""
    import torch._inductor.compile_fx  # noqa: F401
    from torch._inductor.cpu_vec_isa import valid_vec_isa_list

    valid_vec_isa_list()


class _Caller:
    """Selector data of a connection whose run ends when its caller does (``end_with_caller``)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid


def _start_one(listener: socket.socket, selector: selectors.BaseSelector, started_with: dict[str, str]) -> None:
    """Fork the command line the next caller sends, and tell the caller its pid."""
    from torchlint.runtime.parent import warm_start

    connection, _ = listener.accept()
    try:
        request, fds = _receive(connection)
    except (OSError, ValueError):
        connection.close()  # the caller went away, or sent no request: nothing to answer
        return
    if request.get("same_start") and not starts_the_same(request["env"], started_with):
        for fd in fds:
            os.close(fd)
        differ = sorted(key for key in set(request["env"]) | set(started_with) if not starts_the_same(
            {key: request["env"].get(key, "")}, {key: started_with.get(key, "")}))
        try:
            connection.sendall(json.dumps({"refused": f"started with other {', '.join(differ)}"}).encode() + b"\n")
        except OSError:
            pass
        connection.close()
        return
    stdout, stderr = fds[:2]
    stdin = fds[2] if len(fds) == 3 else subprocess.DEVNULL
    script = request.get("script")
    if script:
        def main() -> int:
            return warm_start.run_script_as_main(script, request["argv"])
    else:
        def main() -> int:
            return warm_start.run_as_main("torchlint", request["argv"], path0=os.getcwd())
    # Its own session: the caller kills the group on its timeout.
    pid = warm_start.fork(main, cwd=request["cwd"], env=request["env"], stdin=stdin, stdout=stdout,
                          stderr=stderr, start_new_session=True,
                          leave=lambda: _leave_the_server(selector, connection)).pid
    for fd in fds:
        os.close(fd)
    try:
        connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    except OSError:
        pass  # the run goes on; its end is still waited for below
    selector.register(os.pidfd_open(pid), selectors.EVENT_READ, (pid, connection))
    if request.get("end_with_caller"):
        # The caller sends nothing more: the connection turns readable when it closes.
        selector.register(connection, selectors.EVENT_READ, _Caller(pid))


def _caller_left(key: selectors.SelectorKey, selector: selectors.BaseSelector) -> None:
    """The caller of a running ``end_with_caller`` run closed its end: end the run's group."""
    selector.unregister(key.fileobj)
    try:
        os.killpg(key.data.pid, signal.SIGKILL)
    except OSError:
        pass  # it ended meanwhile; its pidfd says so next


def _answer_end(key: selectors.SelectorKey, selector: selectors.BaseSelector) -> None:
    pid, connection = key.data
    selector.unregister(key.fd)
    os.close(key.fd)
    if connection in selector.get_map():
        selector.unregister(connection)
    _, status = os.waitpid(pid, 0)
    try:
        connection.sendall(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
    except OSError:
        pass  # the caller gave up on it (its timeout)
    connection.close()


def _leave_the_server(selector: selectors.BaseSelector, connection: socket.socket) -> None:
    """In the fork: close what is the server's, the other runs' sockets and pidfds included."""
    for key in list(selector.get_map().values()):
        if isinstance(key.fileobj, socket.socket):
            key.fileobj.close()
        else:
            os.close(key.fd)
        if isinstance(key.data, tuple):
            key.data[1].close()  # a run's connection
    selector.close()
    connection.close()


def _receive(connection: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _, _ = socket.recv_fds(connection, 1 << 16, 3)
    while len(data) < _HEADER.size:
        data += connection.recv(1 << 16)
    (length,) = _HEADER.unpack_from(data)
    while len(data) < _HEADER.size + length:
        more = connection.recv(1 << 16)
        if not more:
            raise ValueError("request cut short")
        data += more
    if len(fds) not in (2, 3):
        for fd in fds:
            os.close(fd)
        raise ValueError("a request carries its stdout and stderr, and may carry its stdin")
    return json.loads(data[_HEADER.size:_HEADER.size + length]), list(fds)


def starts_the_same(env: dict[str, str], started_with: dict[str, str]) -> bool:
    """Whether a process started with ``env`` starts as one started with ``started_with``."""
    for key in set(env) | set(started_with):
        if env.get(key) != started_with.get(key) and not (key in LATE_READ or key.startswith(LATE_READ_PREFIXES)):
            return False
    return True


# ------------------------------------------------------------------------------ the caller

class WarmServer:
    """The caller's side: ``run(argv, cwd, env, timeout)`` -> (returncode, stdout, stderr),
    as ``subprocess.run([python, "-m", "torchlint", *argv], capture_output=True, text=True)``."""

    def __init__(self, *, python: str | None = None, env: dict[str, str] | None = None, compiles: bool = False) -> None:
        """``python``: the interpreter the runs are to start in (this one by default); ``env``:
        the environment they start with (this process's by default); ``compiles``: several of
        the runs will compile with Inductor (``serve``)."""
        self.folder = tempfile.mkdtemp(prefix="torchlint-warm-")
        self.address = os.path.join(self.folder, "socket")
        self.environment = dict(os.environ if env is None else env)
        code = f"from torchlint.runtime.parent.warm_server import serve; serve({self.address!r}, {os.getpid()}, {compiles!r})"
        self.process = subprocess.Popen([python or sys.executable, "-c", code], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, start_new_session=True, env=self.environment)
        self.ready = self._wait_ready()

    def _wait_ready(self) -> bool:
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            if not selector.select(START_TIMEOUT_S):
                self.close()
                return False
        if self.process.stdout.readline() != b"ready\n":
            self.close()
            return False
        return True

    def serves(self, env: dict[str, str]) -> bool:
        """Whether a command with environment ``env`` would start the same in the server."""
        if not self.ready or self.process.poll() is not None:
            return False
        return starts_the_same(env, self.environment)

    def run(self, argv: list[str], *, cwd: str | Path, env: dict[str, str], timeout: float) -> tuple[int, str, str]:
        deadline = time.monotonic() + timeout
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(self.address)
            payload = json.dumps({"argv": argv, "cwd": str(cwd), "env": env}).encode()
            socket.send_fds(connection, [_HEADER.pack(len(payload)) + payload], [out_write, err_write])
        finally:
            os.close(out_write)
            os.close(err_write)
        answers = connection.makefile("rb")
        pid = json.loads(answers.readline())["pid"]
        try:
            stdout, stderr = _read_until_closed(out_read, err_read, deadline)
        except subprocess.TimeoutExpired:
            os.killpg(pid, signal.SIGKILL)
            raise subprocess.TimeoutExpired(argv, timeout) from None
        finally:
            os.close(out_read)
            os.close(err_read)
        returncode = json.loads(answers.readline())["returncode"]
        connection.close()
        return returncode, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process.stdout.close()
        try:
            os.unlink(self.address)
        except OSError:
            pass
        try:
            os.rmdir(self.folder)
        except OSError:
            pass


def _read_until_closed(out_fd: int, err_fd: int, deadline: float) -> tuple[bytes, bytes]:
    """Both pipes to their end, or TimeoutExpired at ``deadline``."""
    chunks: dict[int, bytearray] = {out_fd: bytearray(), err_fd: bytearray()}
    with selectors.DefaultSelector() as selector:
        for fd in chunks:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise subprocess.TimeoutExpired("torchlint", 0)
            for key, _ in selector.select(remaining):
                chunk = os.read(key.fd, 1 << 16)
                if chunk:
                    chunks[key.fd] += chunk
                else:
                    selector.unregister(key.fd)
    return bytes(chunks[out_fd]), bytes(chunks[err_fd])
