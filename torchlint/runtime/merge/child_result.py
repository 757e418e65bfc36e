"""What the parent read back from one child run: its events, how it ended, the tail of its
output. ``parent.runner`` makes it; ``merge.matching`` and ``distributed.report`` read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ChildResult:
    events: list[dict[str, Any]]
    returncode: int | None
    timed_out: bool
    seconds: float
    script: str = ""
    output_tail: str = ""
    signal_name: str | None = field(default=None)
    #: The signal that stopped `torchlint run` itself (SIGTERM, a second Ctrl-C), which then
    #: stopped the program: the events are what was gathered until then.
    stopped_by: str | None = None
    stopped_signo: int = 0

    def first(self, kind: str) -> dict[str, Any] | None:
        return next((e for e in self.events if e["event"] == kind), None)
