"""Terminating signals to `torchlint run` (SIGTERM, SIGHUP, SIGINT, SIGQUIT) become one
exception in the main thread, so that every one of them gets the cleanup Ctrl-C always had:
stop the target and everything it started, then exit with 128 + the signal's number."""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT", "SIGQUIT") if hasattr(signal, name))


class Stopped(BaseException):
    """A BaseException, like KeyboardInterrupt: the target's run is abandoned, not reported."""

    def __init__(self, signo: int) -> None:
        super().__init__(signo)
        self.signo = signo
        self.name = signal.Signals(signo).name
        self.exit_code = 128 + signo


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread can have signal handlers; the caller keeps its own
        return
    fired: list[int] = []

    def stop(signo: int, frame: object) -> None:
        if not fired:  # a second signal must not interrupt the cleanup of the first
            fired.append(signo)
            raise Stopped(signo)

    previous = {signo: signal.signal(signo, stop) for signo in STOP_SIGNALS}
    try:
        yield
    finally:
        for signo, handler in previous.items():
            signal.signal(signo, handler)
