"""The parent half of `torchlint run`: start the child, watch the clock, collect its JSON.

The child runs in its own session (process group) so that a timeout or Ctrl-C kills the
target and everything it started (DataLoader workers, shells), not just the interpreter.
Its stdout and stderr share one pipe, drained by a thread so megabytes of output cannot
block it; the last part is kept for the report of a crash.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from torchlint.runtime.events import read_events
from torchlint.runtime.target import Target

OUTPUT_TAIL_BYTES = 64 * 1024
TERMINATE_GRACE_S = 2.0


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

    def to_json(self, events_path: Path) -> dict[str, Any]:
        return {
            "script": str(self.target.path),
            "entry": self.target.entry,
            "args": list(self.args),
            "device": self.device,
            "steps": self.steps,
            "quiet": self.quiet,
            "plugins": list(self.plugins),
            "project_root": self.project_root,
            "events": str(events_path),
            "options": dict(self.options),
        }


@dataclass
class ChildResult:
    events: list[dict[str, Any]]
    returncode: int | None
    timed_out: bool
    seconds: float
    script: str = ""
    output_tail: str = ""
    signal_name: str | None = field(default=None)

    def first(self, kind: str) -> dict[str, Any] | None:
        return next((e for e in self.events if e["event"] == kind), None)


class _OutputPump(threading.Thread):
    """Copies the child's output to our stderr (unless quiet) and keeps its tail."""

    def __init__(self, pipe: BinaryIO, forward: bool) -> None:
        super().__init__(daemon=True, name="torchlint-run-output")
        self.pipe = pipe
        self.forward = forward
        self.tail = bytearray()

    def run(self) -> None:
        sink = getattr(sys.stderr, "buffer", None) if self.forward else None
        while True:
            chunk = self.pipe.read1(65536) if hasattr(self.pipe, "read1") else self.pipe.read(65536)
            if not chunk:
                break
            self.tail += chunk
            del self.tail[:-OUTPUT_TAIL_BYTES]
            if sink is not None:
                try:
                    sink.write(chunk)
                    sink.flush()
                except (OSError, ValueError):
                    sink = None


class RunningChild:
    """A started child; ``finish()`` waits for it (within the timeout) and collects its events."""

    def __init__(self, spec: RunSpec, *, cwd: Path, python: str | None = None) -> None:
        self.spec = spec
        self.workdir = Path(tempfile.mkdtemp(prefix="torchlint-run-"))
        self.events_path = self.workdir / "events.jsonl"
        self.events_path.touch()
        spec_path = self.workdir / "spec.json"
        spec_path.write_text(json.dumps(spec.to_json(self.events_path)))
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONFAULTHANDLER="1", TORCHLINT_RUN_CHILD="1")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [python or sys.executable, "-m", "torchlint.runtime.child", str(spec_path)],
            cwd=cwd,
            env=env,
            # A script waiting for keyboard input would otherwise hang until the timeout.
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.pump = _OutputPump(self.proc.stdout, forward=not spec.quiet)
        self.pump.start()

    def kill(self) -> None:
        _kill_group(self.proc)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def finish(self) -> ChildResult:
        timed_out = False
        try:
            remaining = max(0.0, self.spec.timeout - (time.monotonic() - self.started))
            try:
                self.proc.wait(timeout=remaining)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(self.proc)
            seconds = time.monotonic() - self.started
            _kill_leftovers(self.proc)
            self.pump.join(timeout=5)
            returncode = self.proc.returncode
            signal_name = None
            if returncode is not None and returncode < 0 and not timed_out:
                signal_name = _signal_name(-returncode)
            return ChildResult(
                events=list(read_events(self.events_path)),
                returncode=returncode,
                timed_out=timed_out,
                seconds=seconds,
                script=str(self.spec.target.path),
                output_tail=bytes(self.pump.tail).decode("utf-8", "replace"),
                signal_name=signal_name,
            )
        except BaseException:  # Ctrl-C in the parent: leave nothing running behind us
            _kill_group(self.proc)
            raise
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)


def run_child(spec: RunSpec, *, cwd: Path, python: str | None = None) -> ChildResult:
    return RunningChild(spec, cwd=cwd, python=python).finish()


def _kill_group(proc: subprocess.Popen) -> None:
    for sig, grace in ((signal.SIGTERM, TERMINATE_GRACE_S), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _kill_leftovers(proc: subprocess.Popen) -> None:
    """Processes the target started and left running (they would hold our pipe open)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
