"""Terminating signals to `torchlint run` (SIGTERM, SIGHUP, SIGINT, SIGQUIT) become one
exception in the main thread, so that every one of them gets the same cleanup: stop the target
and everything it started, report what was gathered, then exit with 128 + the signal's number.

The first Ctrl-C is the program's, as under python: it is passed on to the program (which
sees KeyboardInterrupt, and may save a checkpoint on it) when ``first_interrupt()`` says it
was; a second one, or any other of these signals, stops the run."""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Callable, Iterator

STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT", "SIGQUIT") if hasattr(signal, name))


class Stopped(BaseException):
    """A BaseException, like KeyboardInterrupt: the target's run is abandoned, not reported."""

    def __init__(self, signo: int) -> None:
        super().__init__(signo)
        self.signo = signo
        self.name = signal.Signals(signo).name
        self.exit_code = 128 + signo


@contextlib.contextmanager
def stopped_by_signals(first_interrupt: Callable[[], bool] | None = None) -> Iterator[None]:
    """``first_interrupt()``: pass the first SIGINT on; True when it was passed on."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread can have signal handlers; the caller keeps its own
        return
    fired: list[int] = []
    interrupts: list[int] = []

    def stop(signo: int, frame: object) -> None:
        if signo == signal.SIGINT and not interrupts and not fired and first_interrupt is not None:
            interrupts.append(signo)
            if first_interrupt():
                return
        if not fired:  # a second signal must not interrupt the cleanup of the first
            fired.append(signo)
            raise Stopped(signo)

    previous = {signo: signal.signal(signo, stop) for signo in STOP_SIGNALS}
    try:
        yield
    finally:
        for signo, handler in previous.items():
            signal.signal(signo, handler)
