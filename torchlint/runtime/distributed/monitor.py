"""Watching the ranks while they run, to stop them as soon as their collectives diverge;
parent side (`torchlint run` itself), plain data only.

The fingerprints travel out of band, through torchlint's evidence channel (one socket
connection per rank), never through the process group, which is what hangs. The runner
shows this monitor what has arrived a few times a second (``RunningChild``'s ``monitor``);
it reads only the new complete lines, and answers with a ``diverged`` event when the ranks
disagree or wait for each other in vain, which ends the run (``runtime.distributed.divergence``).
"""

from __future__ import annotations

import time
from typing import Any, Callable

from torchlint.runtime.distributed.divergence import HANG_AFTER_S, Timelines
from torchlint.runtime.events import parse_events

_WATCHED = ("collective", "collective-done", "outcome", "timed-out")


class DivergenceMonitor:
    def __init__(self, world: int, hang_after: float = HANG_AFTER_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.timelines = Timelines(world)
        self.hang_after = hang_after
        self.clock = clock
        self._offsets: list[int] = []

    def check(self, routes: list[bytes]) -> dict[str, Any] | None:
        now = self.clock()
        for index, data in enumerate(routes):
            if index >= len(self._offsets):
                self._offsets.append(0)
            start = self._offsets[index]
            end = data.rfind(b"\n") + 1
            if end <= start:
                continue
            self._offsets[index] = end
            for event in parse_events(data[start:end]):
                if event["event"] in _WATCHED:
                    # When it arrived here: the waits are measured on our clock.
                    self.timelines.add(event, now)
        found = self.timelines.mismatch()
        reason = "mismatch"
        if found is None:
            found, reason = self.timelines.hang(now, self.hang_after), "hang"
        if found is None:
            return None
        waiting = [[rank, list(call.at) if call.at else None, call.op, round(seconds, 1)] for rank, call, seconds in found.waiting]
        return {"event": "diverged", "reason": reason, "group": found.group, "index": found.index, "waiting": waiting}
