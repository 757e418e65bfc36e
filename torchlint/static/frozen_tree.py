"""Keep a file's syntax tree out of the cycle collector while its rules run.

A parsed file is hundreds of thousands of objects that live until its check ends, and none of
them is in a reference cycle (libcst's nodes point only at their children), so the collector
can free none of them; yet every young-generation pass walked the ones made since the last,
and the older passes walked them again. On timm's 304 files that was 1.2 s of CPU in a 10.6 s
cold check (`--jobs 1`, in-process, the engine's raised thresholds), 0.3 s with the tree kept
out. So a check parses with automatic collection paused, then freezes everything that exists
(`gc.freeze`: the tree and whatever is older) and thaws it all when the file is done. What the
rules make is collected as usual. A young collection first frees the previous file's cycles,
so that none is frozen with the tree and then left for a full collection to find.

A process that keeps objects frozen itself (the language server, between two checks; the
warm server, for the runs it forks) is left to its own policy: its kept objects are out of the
collector already.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Callable, Iterator, TypeVar

T = TypeVar("T")


#: Set by a process that freezes objects itself (``freeze_for_the_process``). Asked before
#: ``gc.get_freeze_count()``, which walks every frozen object: 35 ms per check in a fork of
#: the warm server, which froze a million.
_process_freezes = False


def freeze_for_the_process() -> None:
    """``gc.freeze()`` by a process with a policy of its own: checks then leave collection to it."""
    global _process_freezes
    _process_freezes = True
    gc.freeze()


class FrozenTree:
    """`with FrozenTree() as frozen: tree = frozen.parse(parse, text); ...rules...`"""

    def __init__(self) -> None:
        #: False where the process already froze objects of its own: then nothing is done.
        self.active = not _process_freezes and gc.get_freeze_count() == 0

    def __enter__(self) -> FrozenTree:
        if self.active:
            gc.collect(1)
        return self

    def parse(self, parse: Callable[[str], T], text: str) -> T:
        """`parse(text)` with automatic collection paused, and what exists then frozen."""
        if not self.active:
            return parse(text)
        with _collection_paused():
            tree = parse(text)
        gc.freeze()
        return tree

    def __exit__(self, *exc: object) -> None:
        if self.active:
            gc.unfreeze()


@contextlib.contextmanager
def _collection_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
