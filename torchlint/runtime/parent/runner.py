"""The parent half of `torchlint run`: start the child, watch the clock, collect its JSON.

A supervisor process (``runtime.parent.supervisor``) stands between us and the child, so that a
timeout, Ctrl-C, SIGTERM or our own death kills the target and everything it started
(DataLoader workers, shells, setsid daemons), not just the interpreter. The program's stdin,
stdout and stderr are ours, passed down unchanged; torchlint's own traffic with the child is
the events (``runtime.channel``) and the side channel (``runtime.side_channel``: the progress
lines' order, faulthandler's dumps).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from torchlint.runtime.channel import EvidenceChannel
from torchlint.runtime.child_env import SPEC_ENV
from torchlint.runtime.merge.child_result import ChildResult
from torchlint.runtime.parent import warm_start
from torchlint.runtime.parent.interrupts import Stopped
from torchlint.runtime.parent.warm_start import module_command
from torchlint.runtime.parent.supervisor import TERMINATE_GRACE_S
from torchlint.runtime.side_channel import ParentSide
from torchlint.runtime.parent.target import Target
from torchlint.runtime.child.watchdog import PARENT_GRACE_S

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

    def to_json(self, channel: dict[str, Any], side: dict[str, Any] | None = None) -> dict[str, Any]:
        return {
            "side": side,
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


class RunningChild:
    """A started child; ``finish()`` waits for it (within the timeout) and collects its events.

    The process we start is ``runtime.parent.supervisor``, which starts the child proper and kills
    whatever the target leaves behind; the spec travels in the environment and the events in
    ``runtime.channel``'s pipe, so no file or folder exists that a target could delete or that
    a killed run could leave behind."""

    def __init__(self, spec: RunSpec, *, cwd: Path, python: str | None = None, monitor: Any = None,
                 hold_output: bool = False, stdout_to_stderr: bool = False) -> None:
        """``hold_output``: the program starts after ``side.release()`` (the caller has a
        progress line of its own to say first, ``runtime.side_channel``). ``stdout_to_stderr``:
        the program's stdout goes to our stderr (our stdout carries a JSON report). A quiet
        spec (``-q``) sends the program's output nowhere."""
        self.spec = spec
        #: Watches the events while the child runs (``check(routes)`` -> an event to end the
        #: run with, or None); `--nproc-per-node` uses it to stop ranks that diverged.
        self.monitor = monitor
        self.channel = EvidenceChannel(read_now=False)
        python = python or sys.executable
        env = child_environment(os.environ)
        self.started = time.monotonic()
        if spec.deadline is None:
            spec = self.spec = replace(spec, deadline=self.started + spec.timeout)
        settings = self.channel.child_settings()
        # The script's arguments on the command line, as the user's were: one environment
        # string would hold only 128 KiB of them.
        command = [*module_command(python, "torchlint.runtime.child.main"), *spec.args]
        nproc = (spec.options.get("distributed") or {}).get("nproc")
        self.side = ParentSide(None if spec.quiet else sys.stderr, gate=hold_output and not spec.quiet and not nproc)
        pass_fds: tuple[int, ...] = (self.channel.child_fd, self.side.child_socket.fileno())
        side = self.side.child_settings()
        if nproc:
            from torchlint.runtime.distributed.launch import rank_command, rank_environment

            # Ranks are the launcher's children: they reach the channel by its socket, and
            # the launcher passes on no other descriptor.
            command = rank_command(module_command(python, "torchlint.runtime.distributed.agent"), int(nproc), command)
            settings, pass_fds, side = dict(settings, fd=None), (), None
            env.update(rank_environment())
        env[SPEC_ENV] = json.dumps(spec.to_json(settings, side))
        self.extra_events: list[dict[str, Any]] = []
        try:
            self.proc = warm_start.popen(
                [*module_command(python, "torchlint.runtime.parent.supervisor"), "--parent", str(os.getpid()),
                 *(arg for passed in pass_fds for arg in ("--pass-fd", str(passed))),
                 "--", *command],
                cwd=cwd,
                env=env,
                # The program's own streams: ours, unchanged (a terminal stays a terminal).
                stdout=subprocess.DEVNULL if spec.quiet else _stderr_fd() if stdout_to_stderr else None,
                stderr=subprocess.DEVNULL if spec.quiet else None,
                # Its own session: Ctrl-C in a terminal reaches us, and we stop it in order.
                start_new_session=True,
                pass_fds=pass_fds,
            )
        except BaseException:
            self.channel.child_started()
            self.channel.close()
            self.side.close()
            raise
        self.channel.child_started()
        self.side.child_started()
        if nproc or not self.side.gate:
            self.side.open_now()  # nothing to wait for: our lines go out as they come

    def kill(self) -> None:
        try:
            _stop(self.proc)
        finally:
            self.channel.close()

    def interrupt(self) -> bool:
        """Pass a Ctrl-C on to the program (the supervisor sends it to the child's process
        group); False when the child is already gone."""
        if self.proc.poll() is not None:
            return False
        try:
            os.kill(self.proc.pid, signal.SIGINT)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def finish(self, stopped: Stopped | None = None) -> ChildResult:
        """Wait for the child and collect what it sent. A stop signal to us (``stopped``, or
        one that arrives while we wait) stops the child and everything it started, and the
        result still holds every event that came before it."""
        timed_out = False
        try:
            if stopped is not None:
                raise stopped
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
        except Stopped as stop:  # SIGTERM, a second Ctrl-C: leave nothing running behind us
            stopped = stop
            _stop(self.proc)
        except BaseException:
            _stop(self.proc)
            self.channel.close()
            raise
        try:
            try:
                return self._collect(timed_out, stopped)
            except Stopped as stop:  # the one stop signal came while collecting: once more, quickly
                _stop(self.proc)
                return self._collect(timed_out, stop)
        finally:
            self.channel.close()

    def _collect(self, timed_out: bool, stopped: Stopped | None) -> ChildResult:
        ended = time.monotonic()
        seconds = min(ended, self.spec.deadline) - self.started if ended > self.spec.deadline else ended - self.started
        self.side.join(timeout=0.5 if self.proc.returncode is not None else 5)
        self.side.open_now()  # an orphan may hold the socket open: our lines wait no longer
        events = self.channel.collect() + self.extra_events
        # Ended at the deadline by the watchdog (an event), or by faulthandler (none).
        timed_out = stopped is None and (timed_out or any(e["event"] == "timed-out" for e in events) or (
            ended >= self.spec.deadline and not any(e["event"] == "outcome" for e in events)))
        returncode = self.proc.returncode
        signal_name = None
        if returncode is not None and returncode < 0 and not timed_out and stopped is None:
            signal_name = _signal_name(-returncode)
        return ChildResult(
            events=events,
            returncode=returncode,
            timed_out=timed_out,
            seconds=seconds,
            script=str(self.spec.target.path),
            output_tail=bytes(self.side.tail).decode("utf-8", "replace"),
            signal_name=signal_name,
            stopped_by=stopped.name if stopped is not None else None,
            stopped_signo=stopped.signo if stopped is not None else 0,
        )

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


def child_environment(environ: Any) -> dict[str, str]:
    """The program's environment: the user's, plus torchlint's marker (its own settings travel
    in SPEC_ENV, which the child removes before the program starts). No PYTHONUNBUFFERED or
    PYTHONFAULTHANDLER of ours: the program would buffer its output and print crashes unlike
    under python (the child turns faulthandler on towards the side channel itself)."""
    return dict(environ, TORCHLINT_RUN_CHILD="1")


def _stderr_fd() -> int:
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return 2


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
