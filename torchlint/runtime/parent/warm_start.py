"""Starting torchlint's own processes by fork, from an interpreter that already holds torch.

A `torchlint run` starts two interpreters, the supervisor and then the child, and the child
imports torch: about 2 CPU-seconds, most of a short run. A long-lived process that imported
torch and torchlint once (``runtime.parent.warm_server``, which the test suite starts on each
worker) forks the whole `torchlint run` instead, and that run forks its supervisor and its
child: the same process tree, sessions, pipes, signals and exit statuses as exec'ing
``python -c ...``, without the imports.

Only a process that ``enable()`` marked forks; every other `torchlint run` execs as always. A
marked one execs too wherever a fork could differ from a fresh interpreter: another Python, a
command that is not one of torchlint's modules, or a second thread alive (a fork copies only
the calling thread, and a lock another thread holds stays held forever).
"""

from __future__ import annotations

import atexit
import faulthandler
import io
import os
import runpy
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

_warm = False


#: `python -m` puts the working folder first on sys.path, so a folder named `torchlint` next
#: to the user's script would be imported instead of torchlint. This starts the module with
#: torchlint's own folder there instead (the child then puts the script's folder first).
_LAUNCH = "import runpy, sys; sys.path[0] = sys.argv.pop(1); runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)"


def module_command(python: str, module: str) -> list[str]:
    """The command that runs `module` as `python -m module` would, immune to the working
    folder's own packages."""
    import torchlint

    return [python, "-c", _LAUNCH, str(Path(torchlint.__file__).resolve().parent.parent), module]


def enable() -> None:
    """This process holds torch and torchlint and runs nothing else: start by fork from now on."""
    global _warm
    _warm = True


def popen(command: list[str], **options: Any) -> Any:
    """``subprocess.Popen(command, **options)``, or the same process started by fork when this
    process is warm and ``command`` runs a torchlint module with this interpreter."""
    launch = _module_launch(command)
    if launch is None:
        return subprocess.Popen(command, **options)
    root, module, args = launch
    return fork(lambda: run_as_main(module, args, path0=root), **options)


def _module_launch(command: list[str]) -> tuple[str, str, list[str]] | None:
    """(root, module, arguments) of a ``module_command`` command we may fork instead."""
    if not _warm or threading.active_count() != 1:
        return None
    if len(command) < 5 or command[0] != sys.executable or command[1:3] != ["-c", _LAUNCH]:
        return None
    return command[3], command[4], list(command[5:])


class ForkedProcess:
    """What ``subprocess.Popen`` gives of a started process, for one started by fork."""

    def __init__(self, pid: int, stdout: Any) -> None:
        self.pid = pid
        self.args = [str(pid)]
        self.stdout = stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = 0  # reaped by someone else, as Popen answers then
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if timeout is None:
            while self.returncode is None:
                try:
                    _, status = os.waitpid(self.pid, 0)
                    self.returncode = os.waitstatus_to_exitcode(status)
                except ChildProcessError:
                    self.returncode = 0
            return self.returncode
        deadline = time.monotonic() + timeout
        delay = 0.0005
        while self.poll() is None:  # as Popen.wait(timeout) does: poll with a growing sleep
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(min(delay, remaining, 0.05))
            delay *= 2
        return self.returncode


def fork(main: Any, *, cwd: Any = None, env: dict[str, str] | None = None, stdin: Any = None,
         stdout: Any = None, stderr: Any = None, start_new_session: bool = False,
         pass_fds: tuple[int, ...] = (), leave: Any = None) -> ForkedProcess:
    """Popen's options for a fork that runs ``main()`` (an exit code) and exits; ``stdout`` and
    ``stderr`` may be PIPE (stdout), STDOUT (stderr), DEVNULL or a descriptor, which the fork
    takes over; ``stdin`` DEVNULL or a descriptor.
    ``leave()`` runs first in the fork, to close what is the parent's alone. Every other
    descriptor stays open in the fork: those torchlint passes on purpose (``pass_fds``) and,
    harmlessly, read ends and sockets of the parent's."""
    read_end = write_end = None
    if stdout == subprocess.PIPE:
        read_end, write_end = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()  # or the fork writes the parent's buffered output a second time
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            if leave is not None:
                leave()
            if start_new_session:
                os.setsid()
            if stdin == subprocess.DEVNULL:
                _point(0, os.open(os.devnull, os.O_RDONLY))
            elif isinstance(stdin, int) and stdin >= 0:
                _point(0, stdin)
            if write_end is not None:
                os.dup2(write_end, 1)
            elif stdout == subprocess.DEVNULL:
                _point(1, os.open(os.devnull, os.O_WRONLY))
            elif isinstance(stdout, int) and stdout >= 0:
                _point(1, stdout)
            if stderr == subprocess.STDOUT:
                os.dup2(1, 2)
            elif stderr == subprocess.DEVNULL:
                _point(2, os.open(os.devnull, os.O_WRONLY))
            elif isinstance(stderr, int) and stderr >= 0:
                _point(2, stderr)
            for fd in (read_end, write_end):
                if fd is not None:
                    os.close(fd)
            if cwd is not None:
                os.chdir(cwd)
            if env is not None:
                os.environ.clear()
                os.environ.update(env)
            code = main()
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    if write_end is not None:
        os.close(write_end)
    return ForkedProcess(pid, os.fdopen(read_end, "rb") if read_end is not None else None)


def _point(fd: int, opened: int) -> None:
    """Make ``fd`` refer to what ``opened`` does, and close ``opened`` unless it is a standard
    stream itself (``stdout=2``: the program's stdout joins our stderr, which stays open)."""
    if opened != fd:
        os.dup2(opened, fd)
        if opened > 2:
            os.close(opened)


def run_as_main(module: str, args: list[str], *, path0: str) -> int:
    """In a fork: what ``python -c <_LAUNCH>`` or ``python -m module`` would do in a fresh
    interpreter (``path0``: its ``sys.path[0]``), then the interpreter's exit: other threads
    joined, atexit handlers run, output flushed. The exit code; a death by KeyboardInterrupt
    is a death by SIGINT, as CPython's."""
    sys.modules.pop(module, None)  # a fresh interpreter has not imported what it runs as __main__
    return _run_as_a_fresh_interpreter(lambda: runpy.run_module(module, run_name="__main__", alter_sys=True),
                                       ["-c", *args], path0)


def run_script_as_main(script: str, args: list[str]) -> int:
    """In a fork: what ``python SCRIPT ARGS`` would do (a console script such as ``bin/torchlint``;
    ``sys.path[0]`` its folder), then the interpreter's exit, as ``run_as_main``."""
    return _run_as_a_fresh_interpreter(lambda: runpy.run_path(script, run_name="__main__"), [script, *args],
                                       os.path.dirname(os.path.realpath(script)))


def _run_as_a_fresh_interpreter(run: Any, argv: list[str], path0: str) -> int:
    _as_a_fresh_interpreter()
    sys.argv = argv
    sys.path[0] = path0
    code = 0
    interrupted = False
    try:
        run()
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        interrupted = True
    except BaseException:
        traceback.print_exc()
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]  # what Py_Finalize does first
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 128 + signal.SIGINT
    return code


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


def _as_a_fresh_interpreter() -> None:
    """What exec would have reset: signal handlers, the standard streams as this environment
    asks for them (PYTHONUNBUFFERED, PYTHONFAULTHANDLER), and the random state numpy seeds
    at import. torch's default generator starts from a fixed seed in every process, and
    Python's ``random`` reseeds itself in a fork."""
    for signo in signal.valid_signals():
        try:
            handler = signal.getsignal(signo)
        except (OSError, ValueError):
            continue
        if callable(handler) and handler is not signal.default_int_handler:
            signal.signal(signo, signal.SIG_DFL)  # exec keeps what is ignored, resets what is caught
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.set_wakeup_fd(-1)
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    sys.stdin = sys.__stdin__ = _stream(0, "r", sys.__stdin__, unbuffered)
    sys.stdout = sys.__stdout__ = _stream(1, "w", sys.__stdout__, unbuffered)
    sys.stderr = sys.__stderr__ = _stream(2, "w", sys.__stderr__, unbuffered, errors="backslashreplace")
    if os.environ.get("PYTHONFAULTHANDLER"):
        faulthandler.enable(all_threads=True)
    elif faulthandler.is_enabled():
        faulthandler.disable()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()


def _stream(fd: int, mode: str, old: Any, unbuffered: bool, errors: str | None = None) -> Any:
    """A standard stream as CPython makes one at start-up (``create_stdio``)."""
    encoding = getattr(old, "encoding", None) or "utf-8"
    errors = errors or getattr(old, "errors", None) or "strict"
    raw = io.FileIO(fd, mode, closefd=False)
    writing = mode == "w"
    interactive = raw.isatty()
    if writing and unbuffered:
        buffer: Any = raw
    else:
        buffer = io.BufferedWriter(raw) if writing else io.BufferedReader(raw)
    return io.TextIOWrapper(buffer, encoding=encoding, errors=errors, newline=None if not writing else "\n",
                            line_buffering=writing and interactive, write_through=writing and unbuffered)
