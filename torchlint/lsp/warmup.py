"""A project's first results, computed beside the editor instead of before its first diagnostics.

On a cold start (nothing in the cache) the server's first check would otherwise check every
file of the project before it could publish anything: seconds on a hundred files. Instead
the first check reads the open documents, what they import and what is cached, publishes
that, and starts `torchlint check` over the whole project in a child process: it fills the
same on-disk cache (same configuration, same rules, so the same cache entries) on the other
cores, and the server checks again when it ends, now from the cache, and publishes what
changed. A warm-up that fails or runs past its bound changes nothing but speed: the server
then checks the files it has no result for itself, as it would have at the start.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable

#: Long enough for a large project on a slow machine; a warm-up past it is killed and the
#: server checks the rest itself.
TIMEOUT_S = 600.0


class ProjectWarmup:
    """One `torchlint check` of a project root, run once in the background."""

    def __init__(self, root: Path, *, isolated: bool, done: Callable[[bool], None]) -> None:
        # Run in the root, `check` finds the configuration the server found there.
        self.command = [sys.executable, "-m", "torchlint", "check", ".", "--exit-zero", "--quiet"]
        if isolated:
            self.command.append("--isolated")
        self.root = root
        self._done = done
        self._process: subprocess.Popen | None = None
        self._stopped = False
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name="torchlint-warmup", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        succeeded = False
        try:
            with self._lock:
                if self._stopped:
                    return
                # Its own session, so that stopping it reaches its worker processes too.
                self._process = subprocess.Popen(self.command, cwd=self.root, stdin=subprocess.DEVNULL,
                                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            try:
                succeeded = self._process.wait(timeout=TIMEOUT_S) == 0
            except subprocess.TimeoutExpired:
                self._kill()
        except OSError:
            pass
        finally:
            if not self._stopped:
                self._done(succeeded)

    def stop(self) -> None:
        """The server is shutting down: kill the warm-up and its workers, and tell no one."""
        with self._lock:
            self._stopped = True
        self._kill()

    def _kill(self) -> None:
        import os
        import signal

        process = self._process
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (OSError, AttributeError):  # no process groups (Windows): the process alone
            process.kill()
        process.wait()
