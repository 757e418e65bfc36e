"""The parent half of `torchlint run`: start the child, watch the clock, collect its JSON.

A supervisor process (``runtime.parent.supervisor``) stands between us and the child, so that a
timeout, Ctrl-C, SIGTERM or our own death kills the target and everything it started
(DataLoader workers, shells, setsid daemons), not just the interpreter. Its stdout and stderr
share one pipe, drained by a thread so megabytes of output cannot block it; the last part is
kept for the report of a crash. Events come through ``runtime.channel``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

from torchlint.runtime.channel import EvidenceChannel
from torchlint.runtime.child_env import SPEC_ENV
from torchlint.runtime.merge.child_result import ChildResult
from torchlint.runtime.parent import warm_start
from torchlint.runtime.parent.warm_start import module_command
from torchlint.runtime.parent.supervisor import TERMINATE_GRACE_S
from torchlint.runtime.parent.target import Target
from torchlint.runtime.child.watchdog import PARENT_GRACE_S

OUTPUT_TAIL_BYTES = 64 * 1024
MONITOR_POLL_S = 0.25


@dataclass(frozen=True)
class RunSpec:
    target: Target
    args: tuple[str, ...] = ()
    device: str = "cpu"
    steps: int | None = None
    timeout: float = 300.0
    quiet: bool = False
    plugins: tuple[str, ...] = ()
    project_root: str | None = None
    #: Settings for optional probes (compile, profile), JSON-able; probes read ``ctx.options``.
    options: dict[str, Any] = field(default_factory=dict)
    #: When the run must end, on the ``time.monotonic()`` clock; None: ``timeout`` s from the
    #: child's start. `torchlint run` takes it before any work of its own.
    deadline: float | None = None

    def to_json(self, channel: dict[str, Any]) -> dict[str, Any]:
        return {
            "script": str(self.target.path),
            "entry": self.target.entry,
            "device": self.device,
            "steps": self.steps,
            "quiet": self.quiet,
            "plugins": list(self.plugins),
            "project_root": self.project_root,
            "channel": channel,
            "options": dict(self.options),
            "timeout": self.timeout,
            "deadline": self.deadline,
        }


class _OutputPump(threading.Thread):
    """Copies the child's output to our stderr (unless quiet) and keeps its tail.

    Our own progress line about the static check (``say_after_opening``) comes right after the
    child's opening line ("torchlint: running ... under probes") and before anything the
    program prints: both processes work at once, and the order must not depend on which is
    faster (a forked child won the race that a fresh one, still importing torch, lost). So
    what the child prints after its opening line waits until the static check is done
    (``release``), a fraction of a second at most; before the opening line nothing waits."""

    #: How much of the child's output is searched for its opening line before giving up on it.
    OPENING_SEARCH_BYTES = 1 << 16

    def __init__(self, pipe: BinaryIO, forward: bool, hold: bool = False) -> None:
        super().__init__(daemon=True, name="torchlint-run-output")
        self.pipe = pipe
        self.forward = forward
        self.tail = bytearray()
        self._lock = threading.Lock()
        self._head = bytearray()  # the output up to the child's opening line
        self._opened = False  # the opening line went out
        self._released = not (forward and hold)  # our own lines are all said (or none will come)
        self._said: list[bytes] = []  # our lines, waiting for the opening line
        self._held = bytearray()  # the child's output after its opening line, waiting for ours
        self._sink = getattr(sys.stderr, "buffer", None) if forward else None

    def say_after_opening(self, line: str) -> None:
        with self._lock:
            self._said.append(line.encode())
            self._flush()

    def release(self) -> None:
        """Our lines are said: the child's output flows on."""
        with self._lock:
            self._released = True
            self._flush()

    def run(self) -> None:
        while True:
            chunk = self.pipe.read1(65536) if hasattr(self.pipe, "read1") else self.pipe.read(65536)
            if not chunk:
                break
            self.tail += chunk
            del self.tail[:-OUTPUT_TAIL_BYTES]
            with self._lock:
                if self._opened:
                    self._held += chunk
                else:
                    before = len(self._head)
                    self._head += chunk
                    opening = _OPENING.search(self._head)
                    if opening is not None:
                        cut = opening.end() - before
                        self._write(chunk[:cut])
                        self._opened = True
                        self._held += chunk[cut:]
                    elif len(self._head) > self.OPENING_SEARCH_BYTES:
                        self._write(chunk)
                        self._opened = True
                    else:
                        self._write(chunk)
                self._flush()
        self.open_now()

    def open_now(self) -> None:
        """The child's output ended, or we stop waiting for it: everything goes out now."""
        with self._lock:
            self._opened = self._released = True
            self._flush()

    def _flush(self) -> None:
        if not self._opened:
            return
        for line in self._said:
            self._write(line)
        self._said.clear()
        if self._released and self._held:
            self._write(bytes(self._held))
            self._held.clear()

    def _write(self, data: bytes) -> None:
        if self._sink is None:
            return
        try:
            self._sink.write(data)
            self._sink.flush()
        except (OSError, ValueError):
            self._sink = None


#: The child's opening progress line, once whole (rank-labelled under --nproc-per-node).
_OPENING = re.compile(rb"(?m)^torchlint(?: \(rank \d+\))?: running .* under probes: .*\n")


class RunningChild:
    """A started child; ``finish()`` waits for it (within the timeout) and collects its events.

    The process we start is ``runtime.parent.supervisor``, which starts the child proper and kills
    whatever the target leaves behind; the spec travels in the environment and the events in
    ``runtime.channel``'s pipe, so no file or folder exists that a target could delete or that
    a killed run could leave behind."""

    def __init__(self, spec: RunSpec, *, cwd: Path, python: str | None = None, monitor: Any = None,
                 hold_output: bool = False) -> None:
        """``hold_output``: the program's output waits for ``pump.release()`` (the caller has a
        progress line of its own to say first, ``_OutputPump``)."""
        self.spec = spec
        #: Watches the events while the child runs (``check(routes)`` -> an event to end the
        #: run with, or None); `--nproc-per-node` uses it to stop ranks that diverged.
        self.monitor = monitor
        self.channel = EvidenceChannel(read_now=False)
        python = python or sys.executable
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONFAULTHANDLER="1", TORCHLINT_RUN_CHILD="1")
        fd = str(self.channel.child_fd)
        self.started = time.monotonic()
        if spec.deadline is None:
            spec = self.spec = replace(spec, deadline=self.started + spec.timeout)
        settings = self.channel.child_settings()
        # The script's arguments on the command line, as the user's were: one environment
        # string would hold only 128 KiB of them.
        command = [*module_command(python, "torchlint.runtime.child.main"), *spec.args]
        pass_fd = ["--pass-fd", fd]
        nproc = (spec.options.get("distributed") or {}).get("nproc")
        if nproc:
            from torchlint.runtime.distributed.launch import rank_command, rank_environment

            # Ranks are the launcher's children: they reach the channel by its socket.
            command = rank_command(module_command(python, "torchlint.runtime.distributed.agent"), int(nproc), command)
            settings, pass_fd = dict(settings, fd=None), []
            env.update(rank_environment())
        env[SPEC_ENV] = json.dumps(spec.to_json(settings))
        self.extra_events: list[dict[str, Any]] = []
        try:
            self.proc = warm_start.popen(
                [*module_command(python, "torchlint.runtime.parent.supervisor"), "--parent", str(os.getpid()), *pass_fd,
                 "--", *command],
                cwd=cwd,
                env=env,
                # A script waiting for keyboard input would otherwise hang until the timeout.
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                # Its own session: Ctrl-C in a terminal reaches us, and we stop it in order.
                start_new_session=True,
                pass_fds=(self.channel.child_fd,),
            )
        except BaseException:
            self.channel.child_started()
            self.channel.close()
            raise
        self.channel.child_started()
        self.pump = _OutputPump(self.proc.stdout, forward=not spec.quiet, hold=hold_output)
        self.pump.start()

    def kill(self) -> None:
        try:
            _stop(self.proc)
        finally:
            self.channel.close()

    def finish(self) -> ChildResult:
        timed_out = False
        try:
            # The child ends itself at the deadline, saying where it was (runtime.child.watchdog); we
            # kill it only if it could not.
            remaining = max(0.0, self.spec.deadline - time.monotonic()) + PARENT_GRACE_S
            if self.monitor is None:
                try:
                    self.proc.wait(timeout=remaining)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    _stop(self.proc)
            else:
                timed_out = self._wait_watching(time.monotonic() + remaining)
            ended = time.monotonic()
            seconds = min(ended, self.spec.deadline) - self.started if ended > self.spec.deadline else ended - self.started
            self.pump.join(timeout=5)
            self.pump.open_now()  # an orphan may hold the pipe open: our lines wait no longer
            events = self.channel.collect() + self.extra_events
            # Ended at the deadline by the watchdog (an event), or by faulthandler (none).
            timed_out = timed_out or any(e["event"] == "timed-out" for e in events) or (
                ended >= self.spec.deadline and not any(e["event"] == "outcome" for e in events))
            returncode = self.proc.returncode
            signal_name = None
            if returncode is not None and returncode < 0 and not timed_out:
                signal_name = _signal_name(-returncode)
            return ChildResult(
                events=events,
                returncode=returncode,
                timed_out=timed_out,
                seconds=seconds,
                script=str(self.spec.target.path),
                output_tail=bytes(self.pump.tail).decode("utf-8", "replace"),
                signal_name=signal_name,
            )
        except BaseException:  # Ctrl-C or SIGTERM in the parent: leave nothing running behind us
            _stop(self.proc)
            raise
        finally:
            self.channel.close()


    def _wait_watching(self, until: float) -> bool:
        """Wait for the child, showing the monitor what has arrived every ``MONITOR_POLL_S``;
        stop the child when the monitor gives an event to end with. True: timed out."""
        while True:
            try:
                self.proc.wait(timeout=max(0.0, min(MONITOR_POLL_S, until - time.monotonic())))
                return False
            except subprocess.TimeoutExpired:
                pass
            if time.monotonic() >= until:
                _stop(self.proc)
                return True
            verdict = self.monitor.check(self.channel.received())
            if verdict is not None:
                self.extra_events.append(verdict)
                _stop(self.proc)
                return False


def run_child(spec: RunSpec, *, cwd: Path, python: str | None = None) -> ChildResult:
    return RunningChild(spec, cwd=cwd, python=python).finish()


def _stop(proc: subprocess.Popen) -> None:
    """Ask the supervisor to stop the target (SIGTERM, then SIGKILL after a grace period, then
    every descendant); if it does not answer in time, kill its group ourselves."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, TERMINATE_GRACE_S + 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
