"""Coalesce a burst of edits into one check.

A change after a quiet spell is checked at once (the leading edge): the first keystroke after
a pause is what the user waits on, and delaying it by the whole window would spend most of
the latency budget waiting. Changes that follow within the window restart the timer, so a
burst of typing costs one check when it stops. A change that arrives while a check runs is
checked once that check is done (checks never overlap); the language server's checks stop
early when their text changed (torchlint.static.interrupt), so that wait is short. With a
window of 0, the server's default, every change is checked at once.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable


class Debouncer:
    def __init__(self, delay: float, action: Callable[[], Awaitable[None]]) -> None:
        self.delay = delay
        self._action = action
        self._timer: asyncio.TimerHandle | None = None
        self._last_poke: float | None = None
        self._running = False
        self._again = False
        self._tasks: set[asyncio.Task] = set()

    def poke(self, *, now: bool = False) -> None:
        """Something changed; `now`: skip the window (a document opened, the config changed)."""
        loop = asyncio.get_running_loop()
        moment = loop.time()
        quiet = self._last_poke is None or moment - self._last_poke >= self.delay
        self._last_poke = moment
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_later(0 if now or quiet else self.delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        task = asyncio.get_running_loop().create_task(self._run())
        self._tasks.add(task)  # keep a reference: the loop holds tasks only weakly
        task.add_done_callback(self._tasks.discard)

    async def _run(self) -> None:
        if self._running:
            self._again = True
            return
        self._running = True
        try:
            while True:
                self._again = False
                await self._action()
                if not self._again:
                    break
        finally:
            self._running = False
