"""The `torchlint` command the documentation test puts first on a page's PATH.

A page's commands run in bash, and each `torchlint` in them would start an interpreter and
import torch and every plugin (~0.5 CPU-s for `check`, ~2.5 for `run`). This command hands its
command line, working folder, environment and standard streams to the page's warm server
(``torchlint.runtime.parent.warm_server``: a process that imported all of it once and forks
each command), waits for the run's end and exits as the run did. Where the server is not there,
or refuses because the environment would start differently (`PYTHONPATH=. torchlint ...`), it
runs the real command itself (``exec``), so what the page shows is what a fresh run prints.

It runs in front of every command, so it imports no torch and no torchlint: only the stdlib,
under ``python -SE``. It speaks the server's socket protocol itself (a header with the length,
a JSON request, its stdout, stderr and stdin as passed descriptors; JSON lines back).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys

#: Waiting for the server to take the request (it forks at once; minutes mean it is stuck).
ANSWER_TIMEOUT_S = 60.0
#: The longest a run may take before this command ends it; the docs test's own timeout is shorter.
RUN_TIMEOUT_S = 900.0
#: The signals a terminal or a test's timeout sends, passed on to the run's process group.
PASSED_ON = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def main(address: str, real: str) -> None:
    """Run ``sys.argv[1:]`` through the server at ``address``, or exec ``real`` with them."""
    argv = sys.argv[1:]
    connection = _request(address, real, argv)
    if connection is None:
        os.execv(real, [real, *argv])
    answers = connection.makefile("rb")
    pid = _pid(answers)
    if pid is None:
        connection.close()  # the server ends a run whose caller leaves (end_with_caller)
        os.execv(real, [real, *argv])
    for signo in PASSED_ON:
        signal.signal(signo, lambda signo, frame: _kill_group(pid, signo))
    connection.settimeout(RUN_TIMEOUT_S)
    try:
        line = answers.readline()
    except TimeoutError:
        _kill_group(pid, signal.SIGKILL)
        sys.exit(124)
    _exit_as(json.loads(line)["returncode"] if line else 1)


def _request(address: str, real: str, argv: list[str]) -> socket.socket | None:
    """The connection a request went out on, or None where no server takes it."""
    request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "script": real,
               "same_start": True, "end_with_caller": True}
    payload = json.dumps(request).encode()
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(ANSWER_TIMEOUT_S)
    try:
        connection.connect(address)
        socket.send_fds(connection, [struct.pack("!I", len(payload)) + payload], [1, 2, 0])
    except OSError:
        connection.close()
        return None
    return connection


def _pid(answers) -> int | None:
    """The run's pid, or None where the server refused it or did not answer."""
    try:
        line = answers.readline()
    except OSError:
        return None
    if not line:
        return None
    return json.loads(line).get("pid")


def _kill_group(pid: int, signo: int) -> None:
    try:
        os.killpg(pid, signo)
    except OSError:
        pass  # it has ended


def _exit_as(returncode: int) -> None:
    """Exit with the run's status: a run killed by a signal is this command killed by it."""
    sys.stdout.flush()
    if returncode < 0:
        signal.signal(-returncode, signal.SIG_DFL)
        os.kill(os.getpid(), -returncode)
    sys.exit(returncode)


def write(folder, address: str, real: str, python: str) -> str:
    """Write the `torchlint` command into ``folder``: runs with ``python`` and hands its command
    lines to the server at ``address``, else execs ``real``. Returns its path."""
    path = os.path.join(folder, "torchlint")
    here = os.path.dirname(os.path.abspath(__file__))
    with open(path, "w") as out:
        out.write(f"#!{python} -SE\n"
                  f"import sys\nsys.path.append({here!r})\n"
                  f"from warm_command import main\nmain({address!r}, {real!r})\n")
    os.chmod(path, 0o755)
    return path
