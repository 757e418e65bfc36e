"""The current step as seen from outside the model, and where its NaN/Inf came from.

Between two backward passes the probe keeps a *record* of every torch operation the
program ran outside any module (the loss, a normalisation in the training loop, the
batch's preprocessing) and of every top-level module call (the model, an
`nn.CrossEntropyLoss`): the function, its arguments and its floating results, held until
the step's backward is over, with the version counter of each tensor so that a later
in-place edit is noticed. Nothing is checked while recording: when a value the probe does
check (a loss passed to `backward`, a model's output) holds NaN/Inf, `origin_of` walks
back from it through the producers to the first record whose inputs were finite.
A module call on that path is judged by the probe (it replays it, see ``replay``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from torchlint.probe import Site

from .values import Origin, Outside, all_finite, is_float, judge, version_of

Tensor = torch.Tensor

#: Ops whose result a second run would not reproduce.
RANDOM = ("rand", "dropout", "bernoulli", "normal", "multinomial", "uniform", "exponential", "poisson", "empty")

#: Records kept per step, and bytes of results they may hold; past either, the oldest half
#: goes (their results then count as made outside the step).
CAPACITY = 2048
BYTES = 256 * 2**20


@dataclass(eq=False)
class Call:
    """What replaying a top-level module call needs, taken when it started."""

    module: torch.nn.Module
    rng: Tensor
    cuda_rng: Tensor | None
    grad_enabled: bool
    #: (device type, dtype) of each autocast region the call ran in.
    autocast: tuple[tuple[str, torch.dtype], ...]
    versions: list[tuple[Tensor, int]]
    #: Set once judged: where the call's NaN/Inf came from (None: not found).
    origin: Origin = None
    judged: bool = False


@dataclass(eq=False)
class Record:
    index: int
    op: str
    site: Site | None
    func: Any
    args: tuple
    kwargs: dict
    inputs: list[Tensor]
    input_versions: list[Any]  # int, None for an in-place target, UNTRACKED (an inference tensor)
    scalars: list[Any]
    outputs: list[Tensor]
    output_versions: list[Any]
    #: An in-place op (its first input is its output, edited).
    inplace: bool = False
    call: Call | None = None
    notes: dict[str, Any] = field(default_factory=dict)


def flatten(args: tuple, kwargs: dict) -> tuple[list[Tensor], list[Any]]:
    """Tensor arguments and Python-number arguments, one list level deep (`torch.cat([a, b])`),
    leaving out an `out=` tensor (overwritten, not read)."""
    tensors: list[Tensor] = []
    scalars: list[Any] = []
    values = list(args) + [value for key, value in kwargs.items() if key != "out"]
    for value in values:
        if isinstance(value, Tensor):
            tensors.append(value)
        elif isinstance(value, (float, int)) and not isinstance(value, bool):
            scalars.append(value)
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, Tensor):
                    tensors.append(item)
                elif isinstance(item, (float, int)) and not isinstance(item, bool):
                    scalars.append(item)
    return tensors, scalars


def float_results(result: Any) -> list[Tensor]:
    if isinstance(result, Tensor):
        return [result] if is_float(result) else []
    if isinstance(result, (tuple, list)):
        return [item for item in result if isinstance(item, Tensor) and is_float(item)]
    return []


class Window:
    def __init__(self) -> None:
        self.records: list[Record] = []
        self._producers: dict[int, list[Record]] = {}
        self._next = 0
        self._bytes = 0

    def __len__(self) -> int:
        return len(self.records)

    def clear(self) -> None:
        self.records = []
        self._producers = {}
        self._bytes = 0

    def add(self, record: Record) -> Record:
        record.index = self._next
        self._next += 1
        size = sum(t.numel() * t.element_size() for t in record.outputs if t._base is None)
        if len(self.records) >= CAPACITY or self._bytes + size > BYTES:
            self.keep_from(self.records[len(self.records) // 2].index if len(self.records) > 1 else self._next)
        self.records.append(record)
        self._bytes += size
        for tensor in record.outputs:
            self._producers.setdefault(id(tensor), []).append(record)
        return record

    def has_graph(self) -> bool:
        """Some recorded result is part of an autograd graph (a backward may follow)."""
        return any(t.requires_grad for record in self.records for t in record.outputs)

    def keep_from(self, index: int) -> None:
        """Forget the records before `index` (an eval loop never reaches a backward)."""
        kept = [r for r in self.records if r.index >= index]
        if len(kept) == len(self.records):
            return
        self.clear()
        for record in kept:
            self.records.append(record)
            self._bytes += sum(t.numel() * t.element_size() for t in record.outputs if t._base is None)
            for tensor in record.outputs:
                self._producers.setdefault(id(tensor), []).append(record)

    def producer(self, tensor: Tensor, before: float = float("inf")) -> Record | None:
        """The latest record before index `before` that returned this very tensor."""
        for record in reversed(self._producers.get(id(tensor), ())):
            if record.index < before and any(out is tensor for out in record.outputs):
                return record
        return None

    def origin_of(self, tensor: Tensor, judge_call: Callable[[Record], Origin], before: float = float("inf")) -> Origin:
        """Where the NaN/Inf in `tensor` (as the record at index `before` saw it) came from:
        walk back through the records to the first one whose inputs were finite. None when
        the trail is lost (a tensor changed in place by something not recorded)."""
        for _ in range(CAPACITY + 1):
            record = self.producer(tensor, before)
            if record is None:
                return Outside("a tensor made before the step (the data, a parameter, a buffer)")
            position = next(i for i, out in enumerate(record.outputs) if out is tensor)
            if record.output_versions[position] != version_of(tensor):
                return None  # changed in place since, by something the probe did not record
            if record.call is not None:
                return judge_call(record)
            bad = None
            for value, version in zip(record.inputs, record.input_versions):
                if not is_float(value):
                    continue
                finite = self.finite_at(record, value, version)
                if finite is None:
                    return None
                if not finite:
                    bad = value
                    break
            if bad is None:
                return judge(record.op, record.inputs, record.scalars, record.outputs, record.site, record.index)
            tensor, before = bad, record.index
        return None

    def finite_at(self, record: Record, value: Tensor, version: int | None) -> bool | None:
        """Whether `value` was finite when `record` ran: an input from its value now, if it has
        not changed since; an in-place op's target (version None) from what made it."""
        if version is None:
            return self.finite_before(record, value)
        if version_of(value) != version:
            return None
        return all_finite(value)

    def finite_before(self, record: Record, value: Tensor) -> bool | None:
        """An in-place op's target as it was before the edit, which is gone: the flags a model
        call's outputs got when it returned, or the op that made it run again on its recorded
        inputs (not a random one). None when neither is known."""
        producer = self.producer(value, before=record.index)
        if producer is None:
            return None
        position = next(i for i, out in enumerate(producer.outputs) if out is value)
        if producer.call is not None:
            flags = producer.notes.get("finite")
            return flags[position] if flags else None
        if producer.inplace or producer.func is None or any(word in producer.op for word in RANDOM):
            return None
        if any(v is not None and version_of(t) != v for t, v in zip(producer.inputs, producer.input_versions)):
            return None
        try:
            with torch.no_grad():
                again = float_results(producer.func(*producer.args, **producer.kwargs))
        except Exception:  # a factory for a device this process cannot reach, say
            return None
        return all_finite(again[position]) if position < len(again) else None
