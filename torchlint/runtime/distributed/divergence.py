"""Where the ranks' collectives diverged; parent side, plain data only.

Every rank sends a ``collective`` event when it enters a `torch.distributed` collective (the
operation, a fingerprint of what must agree across ranks, the process group, its index in
that group's sequence on this rank, the user line) and ``collective-done`` when it returns.
Per process group, the ranks' sequences must agree call by call. They diverge when:

- at the same index two ranks called different operations, or the same one with a different
  fingerprint (shapes, dtypes, root rank): ``mismatch``, seen as soon as both have entered;
- at the same index every rank called an all-to-all, and what one rank expects to receive
  from another is not what that one sends it (split sizes computed by each rank on its own):
  ``mismatch`` too, once all have entered;
- a rank waits in a collective while every other rank of its group is done (finished) or
  waits too, somewhere else: ``hang``, seen ``HANG_AFTER_S`` after the wait began, not at the
  backend's timeout;
- after the run, the sequences differ in length while every rank finished normally or ended
  inside a collective (the backend's error, or the peer's closed connection).

The divergence reported is the first index where the ranks' calls differ at all, user line
included: for a collective inside ``if rank == 0:`` the later calls pair up wrongly (rank 0's
conditional ``all_reduce`` with rank 1's next one), and the first difference is the line
only rank 0 ran.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: How long a rank may wait in a collective while no other rank can join it before the run
#: is stopped as diverged. Ranks doing the same work wait for each other a few milliseconds.
HANG_AFTER_S = 3.0

ORDER, SHAPE = "order", "shape"


@dataclass(frozen=True)
class Call:
    rank: int
    group: str
    index: int
    op: str
    fingerprint: tuple
    at: tuple[str, int] | None
    source: str = ""
    #: An all-to-all's elements sent to, and received from, each rank (``collectives.exchange``).
    exchange: tuple | None = None

    @property
    def agreement(self) -> tuple:
        """What must be the same on every rank."""
        return (self.op, self.fingerprint)

    @property
    def identity(self) -> tuple:
        return (self.op, self.fingerprint, self.at)


@dataclass
class Side:
    ranks: list[int]
    call: Call | None  # None: these ranks called no collective at this index
    state: str = ""  # for ranks without a call: "finished", "raised", "stopped", "still running"


@dataclass
class Divergence:
    kind: str  # ORDER (TL719) or SHAPE (TL720)
    group: str
    index: int
    sides: list[Side]
    culprit: Call | None
    waiting: list[tuple[int, Call, float]] = field(default_factory=list)  # rank, call, seconds waited
    #: What disagrees when the fingerprints agree (an all-to-all's sizes), in words.
    detail: str = ""

    @property
    def code(self) -> str:
        return "TL720" if self.kind == SHAPE else "TL719"


class Timelines:
    """The ranks' collectives as they arrive (live) or all at once (after the run)."""

    def __init__(self, world: int) -> None:
        self.world = world
        self.calls: dict[str, dict[int, list[Call]]] = {}
        self.done: set[tuple[int, str, int]] = set()
        self.entered_at: dict[tuple[int, str, int], float] = {}
        self.ended: dict[int, str] = {}  # rank -> how it ended (outcome status, timed-out)

    def add(self, event: dict[str, Any], now: float = 0.0) -> None:
        kind, rank = event.get("event"), event.get("rank")
        if not isinstance(rank, int):
            return
        if kind == "collective":
            at = event.get("at")
            call = Call(rank, str(event.get("group", "world")), int(event.get("index", 0)), str(event.get("op", "?")),
                        _frozen(event.get("fingerprint", ())), (at[0], int(at[1])) if isinstance(at, list) and len(at) == 2 else None,
                        str(event.get("source", "")), _exchange(event.get("exchange")))
            self.calls.setdefault(call.group, {}).setdefault(rank, []).append(call)
            self.entered_at[(rank, call.group, call.index)] = now
        elif kind == "collective-done" and not event.get("error"):
            # A collective that raised (the backend's timeout, a peer gone) was never completed.
            self.done.add((rank, str(event.get("group", "world")), int(event.get("index", 0))))
        elif kind == "outcome":
            self.ended[rank] = str(event.get("status", "completed"))
        elif kind == "timed-out":
            self.ended.setdefault(rank, "timed-out")

    # -- the three ways to diverge ----------------------------------------------------------
    def mismatch(self) -> Divergence | None:
        """Two ranks' calls at the same index disagree (both have entered it)."""
        for group, by_rank in self.calls.items():
            for index in range(max((len(calls) for calls in by_rank.values()), default=0)):
                present = [calls[index] for calls in by_rank.values() if len(calls) > index]
                if len({call.agreement for call in present}) > 1:
                    return self._first_difference(group, upto=index)
                if len(present) == len(by_rank) == len(self._members(group)):
                    unpaired = _unpaired_exchange(present)
                    if unpaired:
                        entries = {call.rank: call for call in present}
                        divergence = self._divergence(group, index, entries)
                        divergence.kind, divergence.detail = SHAPE, unpaired
                        return divergence
        return None

    def hang(self, now: float, after: float = HANG_AFTER_S) -> Divergence | None:
        """A rank waits while no other rank can join it: each has ended or waits elsewhere."""
        waiting = self._waiting(now, after)
        if not waiting or any(rank not in waiting and rank not in self.ended for rank in range(self.world)):
            return None
        places = {(call.group, call.index, call.agreement) for call, _ in waiting.values()}
        if len(places) == 1 and len(waiting) == self.world:
            return None  # all in the same collective: slow or stuck inside, not diverged (the timeout tells)
        first = min(waiting.items(), key=lambda item: (item[1][0].group != "world", item[0]))
        group = first[1][0].group
        divergence = self._first_difference(group)
        divergence.waiting = [(rank, call, seconds) for rank, (call, seconds) in sorted(waiting.items())]
        return divergence

    def after_run(self) -> Divergence | None:
        """Once every rank has ended: a mismatch, or sequences of different lengths where no
        rank's own error explains it."""
        found = self.mismatch()
        if found is not None:
            return found
        for group, by_rank in self.calls.items():
            lengths = {rank: len(by_rank.get(rank, ())) for rank in self._members(group)}
            if len(set(lengths.values())) <= 1:
                continue
            if all(self._ended_cleanly_or_inside(rank, group) for rank in lengths):
                return self._first_difference(group)
        return None

    # -- helpers ----------------------------------------------------------------------------
    def _members(self, group: str) -> list[int]:
        if group == "world":
            return list(range(self.world))
        return sorted({rank for rank in self.calls.get(group, {})})

    def _ended_cleanly_or_inside(self, rank: int, group: str) -> bool:
        if self.ended.get(rank) in ("completed", "steps-reached"):
            return True
        calls = [call for by_rank in self.calls.values() for call in by_rank.get(rank, ())]
        last = calls[-1] if calls else None
        return last is not None and (rank, last.group, last.index) not in self.done

    def _waiting(self, now: float, after: float) -> dict[int, tuple[Call, float]]:
        waiting = {}
        for by_rank in self.calls.values():
            for rank, calls in by_rank.items():
                if not calls or rank in self.ended:
                    continue
                last = calls[-1]
                key = (rank, last.group, last.index)
                seconds = now - self.entered_at.get(key, now)
                if key not in self.done and seconds >= after:
                    previous = waiting.get(rank)
                    if previous is None or self.entered_at.get((rank, previous[0].group, previous[0].index), 0) < self.entered_at[key]:
                        waiting[rank] = (last, seconds)
        return waiting

    def _first_difference(self, group: str, upto: int | None = None) -> Divergence:
        by_rank = self.calls.get(group, {})
        members = self._members(group)
        longest = max((len(calls) for calls in by_rank.values()), default=0)
        stop = longest if upto is None else upto + 1
        for index in range(stop):
            entries = {rank: (by_rank.get(rank, [])[index] if len(by_rank.get(rank, [])) > index else None) for rank in members}
            if len({call.identity if call else None for call in entries.values()}) > 1:
                return self._divergence(group, index, entries)
        index = max(0, stop - 1)
        entries = {rank: (by_rank.get(rank, [])[index] if len(by_rank.get(rank, [])) > index else None) for rank in members}
        return self._divergence(group, index, entries)

    def _divergence(self, group: str, index: int, entries: dict[int, Call | None]) -> Divergence:
        sides: dict[Any, Side] = {}
        for rank, call in sorted(entries.items()):
            key = call.identity if call else ("none", self._state(rank))
            side = sides.setdefault(key, Side([], call, "" if call else self._state(rank)))
            side.ranks.append(rank)
        calls = [side.call for side in sides.values() if side.call is not None]
        kind = SHAPE if len(calls) == len(sides) and len({c.op for c in calls}) == 1 and len({c.agreement for c in calls}) > 1 else ORDER
        return Divergence(kind, group, index, list(sides.values()), self._culprit(group, calls))

    def _culprit(self, group: str, calls: list[Call]) -> Call | None:
        """The call whose line the other ranks never ran (the collective under ``if rank``);
        else the lowest rank's."""
        by_rank = self.calls.get(group, {})
        for call in calls:
            others = [c.at for rank, seq in by_rank.items() if rank != call.rank for c in seq]
            if others and call.at not in others:
                return call
            if not others and len(by_rank) < len(self._members(group)):
                return call  # the other ranks called nothing in this group at all
        return calls[0] if calls else None

    def _state(self, rank: int) -> str:
        status = self.ended.get(rank)
        if status in ("completed", "steps-reached"):
            return "finished"
        if status:
            return {"raised": "raised an error", "exited": "exited", "timed-out": "timed out"}.get(status, status)
        return "still running"


def _exchange(value: Any) -> tuple | None:
    if isinstance(value, list) and len(value) == 2 and all(isinstance(side, list) for side in value):
        return tuple(tuple(int(n) for n in side) for side in value)
    return None


def _unpaired_exchange(calls: list[Call]) -> str:
    """For one all-to-all entered by every rank of its group (``calls``, ranks 0..n-1 of the
    group in order): the first pair of ranks whose sizes do not pair up, in words; "" when
    every rank receives from each other rank what that one sends it."""
    ordered = sorted(calls, key=lambda call: call.rank)
    if any(call.exchange is None or call.op not in ("all_to_all", "all_to_all_single") for call in ordered):
        return ""
    count = len(ordered)

    def pieces(side: tuple) -> list[int] | None:
        if len(side) == 2 and side[0] == -1:  # an even split of side[1] elements
            return [side[1] // count] * count if side[1] % count == 0 else None
        return list(side) if len(side) == count else None

    sent = [pieces(call.exchange[0]) for call in ordered]
    received = [pieces(call.exchange[1]) for call in ordered]
    for r, call in enumerate(ordered):
        if sent[r] is None or received[r] is None:
            return f"rank {call.rank}'s sizes do not split among {count} ranks"
        for j, other in enumerate(ordered):
            if j != r and sent[j] is not None and received[r][j] != sent[j][r]:
                return (f"rank {call.rank} expects {received[r][j]} elements from rank {other.rank}, which sends it "
                        f"{sent[j][r]}: split sizes computed on each rank alone; exchange them first "
                        "(an all_to_all_single of the counts)")
    return ""


def _frozen(value: Any) -> tuple:
    if isinstance(value, list):
        return tuple(_frozen(v) if isinstance(v, list) else v for v in value)
    return (value,)


def timelines_of(events: list[dict[str, Any]], world: int) -> Timelines:
    timelines = Timelines(world)
    for event in events:
        timelines.add(event, float(event.get("t", 0.0)))
    return timelines
