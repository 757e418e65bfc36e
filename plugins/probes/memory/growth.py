"""Tensors that carry an autograd graph out of the iteration that made them (TL737).

Two ways a program keeps graphs from step to step, followed separately:

* an accumulator: a sum (or product, quotient, `cat`, `stack`) one of whose operands is a
  tensor with a graph from an earlier iteration, itself made by the same accumulation
  (`total_loss += loss`, `total = total + loss`, `preds = torch.cat([preds, out])`). The
  operation that consumes it names the line. A chain is reported once it has been carried
  into two later iterations and was never back-propagated itself (deliberate accumulation
  over micro-batches is).
* kept tensors: the model's outputs, loss values and backward roots of earlier iterations
  still alive, more of them after each iteration (`losses.append(loss)`,
  `outputs.append(model(x))`). Who keeps them is found afterwards (``containers``).

Records are keyed by ``id`` and checked with a weak reference, so nothing here keeps a
tensor alive. They are taken only while the probe watches.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from torchlint.probe import Site, tensors_in

Tensor = torch.Tensor

#: Kinds of records that are candidates for "kept": what a training or evaluation loop makes
#: once per iteration. Intermediate sums are not (they die within the iteration or chain).
OUTPUT, LOSS, ROOT, SUM = "model output", "loss", "backward root", "sum"
CANDIDATES = (OUTPUT, LOSS, ROOT)
#: Autograd nodes counted at most, per measurement.
NODE_LIMIT = 200_000


@dataclass
class Chain:
    """One accumulator carried from iteration to iteration."""

    links: int = 0  # iterations into which it was carried
    #: ... of which began after an optimizer step: a sum carried across a step is never an
    #: accumulation for one backward pass (that one would have come before the step).
    step_links: int = 0
    last: int = -1  # the iteration of its last link
    sites: list[Site] = field(default_factory=list)
    #: (iteration, autograd nodes its graph reached at the end of that iteration)
    nodes: list[tuple[int, int]] = field(default_factory=list)
    backpropagated: bool = False
    reported: bool = False
    ref: Any = None  # weakref to its latest tensor

    def add_site(self, site: Site | None) -> None:
        if site is not None and all((s.path, s.line) != (site.path, site.line) for s in self.sites):
            self.sites.append(site)


class _Record:
    __slots__ = ("ref", "iteration", "steps", "chain", "site", "kind")

    def __init__(self, ref: weakref.ref, iteration: int, steps: int, chain: Chain | None, site: Site | None, kind: str) -> None:
        self.ref = ref
        self.iteration = iteration
        self.steps = steps  # optimizer steps taken when it was made
        self.chain = chain
        self.site = site
        self.kind = kind


@dataclass
class Kept:
    """Candidates of earlier iterations alive at the end of one: their number, what made them."""

    iteration: int
    tensors: list[Tensor]
    kinds: dict[str, int]
    sites: list[Site]
    #: Every one of them was made before the last optimizer step: kept across steps, which
    #: no accumulation for one later backward pass does.
    across_steps: bool
    #: How many were kept, and the autograd nodes they reached, at the last iterations of
    #: this loop (3 at most).
    counts: list[int] = field(default_factory=list)
    nodes: list[int] = field(default_factory=list)


class GrowthWatch:
    def __init__(self, site: Callable[[], Site | None]) -> None:
        self._site = site
        self.iteration = 0
        self.steps = 0  # optimizer steps so far (the probe counts them)
        self.records: dict[int, _Record] = {}
        self.chains: list[Chain] = []
        #: (iteration, kept candidates) at the end of each watched iteration.
        self.kept_counts: list[tuple[int, int]] = []
        #: (iteration, autograd nodes the kept candidates reach)
        self.kept_nodes: list[tuple[int, int]] = []
        #: The same two, per loop (training, evaluation): a pile grows from one iteration of
        #: its loop to the next; an evaluation iteration in between says nothing about it.
        self.loop_counts: dict[str, list[tuple[int, int]]] = {}  # (optimizer steps, count)
        self.loop_nodes: dict[str, list[int]] = {}

    # -- what the program does ------------------------------------------------------------
    def produced(self, value: Any, kind: str, site: Site | None) -> None:
        """A model output, a loss value or a backward root: a candidate for "kept"."""
        for tensor in _tensors_of(value):
            if not tensor.requires_grad or tensor.grad_fn is None:
                continue
            record = self._record_of(tensor)
            if record is None:
                self.records[id(tensor)] = _Record(weakref.ref(tensor), self.iteration, self.steps, None, site, kind)
            elif record.kind == SUM:
                record.kind, record.site = kind, site

    def combined(self, args: tuple, kwargs: dict, result: Any) -> None:
        """An arithmetic result that requires grad: does it carry a graph into this iteration?"""
        chain = None
        carried = across_step = False
        for tensor in tensors_in(args, kwargs):
            record = self._record_of(tensor)
            if record is None:
                continue
            if record.iteration < self.iteration:
                carried = True
                across_step = across_step or record.steps < self.steps
                if record.chain is not None:
                    chain = record.chain
            elif record.chain is not None and chain is None:
                chain = record.chain
        if carried:
            if chain is None:
                chain = Chain()
                self.chains.append(chain)
            if chain.last != self.iteration:
                chain.links += 1
                chain.step_links += across_step
                chain.last = self.iteration
            chain.add_site(self._site())
            chain.ref = weakref.ref(result)
        record = self._record_of(result)
        if record is not None:  # in place: the accumulator itself, now of this iteration
            record.iteration = self.iteration
            record.steps = self.steps
            record.chain = chain or record.chain
        else:
            self.records[id(result)] = _Record(weakref.ref(result), self.iteration, self.steps, chain, None, SUM)

    def backpropagated(self, root: Any) -> None:
        """``root.backward()``: a chain back-propagated is accumulated on purpose."""
        if not isinstance(root, Tensor):
            return
        record = self._record_of(root)
        if record is not None and record.chain is not None:
            record.chain.backpropagated = True

    def forget(self, tensors: list[Tensor]) -> None:
        """These were kept on purpose (back-propagated later): no longer candidates."""
        for tensor in tensors:
            record = self._record_of(tensor)
            if record is not None:
                record.kind = SUM

    def _record_of(self, tensor: Tensor) -> _Record | None:
        record = self.records.get(id(tensor))
        if record is None or record.ref() is not tensor:
            return None
        return record

    # -- at the end of each watched iteration ---------------------------------------------
    def close_iteration(self, following: int, since: int | None = None, loop: str = "", between_steps: bool = False) -> Kept | None:
        """Measure the chains carried into this iteration and the candidates of earlier ones
        still alive; begin iteration ``following``. Returns the kept candidates when their
        number grew at this iteration and the one before (a pile, not one stale tensor).

        ``since``: the first iteration of the one ending, when it spans several (an optimizer
        step ends the iterations its model calls began: a frozen network called twice in one
        step, for a perceptual loss); what they made is not of an earlier one. ``loop``: the
        loop this iteration belongs to; the counts compared are that loop's. ``between_steps``:
        the loop runs between optimizer steps (model calls with none in between: an evaluation
        loop), so its pile grows within one run of it; counts taken across a step are of calls
        inside training steps, each seeing what the step before left in its variables."""
        ending = self.iteration
        since = ending if since is None else min(since, ending)
        live: dict[int, _Record] = {}
        kept: list[tuple[_Record, Tensor]] = []
        for key, record in self.records.items():
            tensor = record.ref()
            if tensor is None:
                continue
            live[key] = record
            if record.kind in CANDIDATES and record.iteration < since and tensor.grad_fn is not None:
                kept.append((record, tensor))
        self.records = live
        for chain in self.chains:
            if chain.last == ending and not chain.reported:
                tensor = chain.ref() if chain.ref is not None else None
                if tensor is not None and tensor.grad_fn is not None:
                    chain.nodes.append((ending, count_nodes([tensor.grad_fn])))
        # A chain carried into a single iteration and gone is a tensor reused once (a
        # weight derived outside the loop): forget it.
        self.chains = [c for c in self.chains if c.links > 1 or c.last == ending or (c.ref is not None and c.ref() is not None)]
        self.iteration = following
        self.kept_counts.append((ending, len(kept)))
        loop_counts = self.loop_counts.setdefault(loop, [])
        loop_counts.append((self.steps, len(kept)))
        if kept:
            nodes = count_nodes([t.grad_fn for _, t in kept])
            self.kept_nodes.append((ending, nodes))
            self.loop_nodes.setdefault(loop, []).append(nodes)
        last = loop_counts[-3:]
        counts = [count for _, count in last]
        one_run = not between_steps or len({steps for steps, _ in last}) == 1
        if len(counts) == 3 and counts[0] < counts[1] < counts[2] and one_run:
            kinds: dict[str, int] = {}
            sites: list[Site] = []
            for record, _ in kept:
                kinds[record.kind] = kinds.get(record.kind, 0) + 1
                if record.site is not None and record.site not in sites:
                    sites.append(record.site)
            across = all(record.steps < self.steps for record, _ in kept)
            return Kept(ending, [t for _, t in kept], kinds, sites, across, counts, self.loop_nodes.get(loop, [])[-3:])
        return None

    def growing_chains(self, across_steps: bool = False) -> list[Chain]:
        """Accumulators carried into at least two later iterations (``across_steps``: across
        two optimizer steps), never back-propagated, not reported yet."""
        return [c for c in self.chains if (c.step_links if across_steps else c.links) >= 2
                and not c.backpropagated and not c.reported and c.sites]


def count_nodes(roots: list[Any], limit: int = NODE_LIMIT) -> int:
    """Autograd nodes reachable from ``roots`` (each counted once), at most ``limit``."""
    return len(reachable(roots, limit)[0])


def reachable(roots: list[Any], limit: int = NODE_LIMIT) -> tuple[set[int], list[Any]]:
    """The ids of the autograd nodes reachable from ``roots``, at most ``limit``, and the
    nodes (which the caller holds while it uses the ids)."""
    seen: set[int] = set()
    stack = [root for root in roots if root is not None]
    # The node objects stay alive while their graph does; holding them here keeps their
    # ids unique during the walk.
    held = []
    while stack and len(seen) < limit:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        held.append(node)
        for child, _ in node.next_functions:
            if child is not None and id(child) not in seen:
                stack.append(child)
    return seen, held


def _tensors_of(value: Any) -> list[Tensor]:
    """The tensors of a model's output: a tensor, or those in a tuple, list or dict (a
    ``ModelOutput`` is a dict), one level deep."""
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        return [item for item in value if isinstance(item, Tensor)]
    return []
