"""DataLoader workers that all start from one copy of the dataset's random generator (TL750).

torch reseeds the global generators of ``random``, numpy and torch in each worker; a
generator the dataset holds as an attribute is copied into each worker as it is, and every
worker draws the same numbers. Checked when a DataLoader with workers starts iterating (a
patched ``DataLoader.__iter__``), on the dataset and the objects it holds one level down (its
transforms), and only for a generator the code that makes samples reads
(``__getitem__``, ``__iter__``, a transform's ``__call__``/``forward``), and only when neither
a ``worker_init_fn`` nor the dataset itself reseeds it (``get_worker_info``).

The same bug reached another way, the global generators: torch seeds Python's ``random`` and
numpy's global generator differently in each worker, and a ``worker_init_fn`` that reseeds
them with one seed (``np.random.seed(42)``) makes every worker draw the same stream again. That
is checked by its effect: in each worker (forked workers, the Linux default), the state of each
global generator when the worker fetches its first sample is fingerprinted, and so is whether
that fetch drew from it; two workers that start a generator they draw from in the same state
are reported, whatever made the states equal. (torch's own generator is not compared: reading
its state would run a tensor operation under the probes in the worker.)
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import random
import sys
from typing import Any, Iterable

import torch
from torch.utils.data import DataLoader

from torchlint.probe import Patches, Probe

#: Methods that make samples: the names a generator they read shows up in.
SAMPLING_METHODS = ("__getitem__", "__getitems__", "__iter__", "__next__", "__call__", "forward")
#: Names in a dataset's code that say it reseeds per worker.
RESEEDS = ("get_worker_info", "worker_init_fn")


class WorkerRandomStateProbe(Probe):
    name = "worker-rng"
    order = 57
    runtime_code = "TL750"
    summary = "DataLoader workers that share the dataset's random generator"

    def install(self) -> None:
        self.checked: set[int] = set()
        self.watched: set[int] = set()  # loaders whose workers' global generators are fingerprinted
        self.readings: list[dict[str, Any]] = []  # per watched loader: its pipe, site and workers
        self.patches = Patches()
        self.patches.replace(DataLoader, "__iter__", self._iterating)

    def uninstall(self) -> None:
        self.patches.restore()
        self.guarded(self._judge_global_streams)()

    def _iterating(self, original: Any) -> Any:
        check = self.guarded(self._check)
        watch = self.guarded(self._watch)

        def iterate(loader: DataLoader) -> Any:
            if loader.num_workers > 0 and loader.worker_init_fn is None and id(loader.dataset) not in self.checked:
                check(loader)
            if loader.num_workers > 1 and id(loader) not in self.watched and _forks(loader):
                reading = watch(loader)
                if reading is not None:
                    users = loader.worker_init_fn
                    # Only while the workers start: the program's loader keeps its own attribute.
                    loader.__dict__["worker_init_fn"] = _Fingerprinting(users, reading["write"])
                    try:
                        return original(loader)
                    finally:
                        loader.__dict__["worker_init_fn"] = users
                        os.close(reading.pop("write"))
            return original(loader)

        return iterate

    # -- the global generators, by their effect -------------------------------------------
    def _watch(self, loader: DataLoader) -> dict[str, Any] | None:
        self.watched.add(id(loader))
        read, write = os.pipe()
        os.set_blocking(read, False)
        reading = {"read": read, "write": write, "site": self.ctx.site(), "workers": loader.num_workers,
                   "init": getattr(loader.worker_init_fn, "__name__", None) if loader.worker_init_fn else None}
        self.readings.append(reading)
        return reading

    def _judge_global_streams(self) -> None:
        for reading in self.readings:
            lines = _read_available(reading.pop("read"))
            by_kind: dict[str, dict[str, list[int]]] = {}
            for line in lines:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                for kind, (digest, drew) in record.get("states", {}).items():
                    if drew:
                        by_kind.setdefault(kind, {}).setdefault(digest, []).append(record.get("worker"))
            for kind, digests in sorted(by_kind.items()):
                same = max(digests.values(), key=len)
                if len(same) < 2:
                    continue
                init = f" (`worker_init_fn={reading['init']}` reseeds it with one seed for every worker?)" if reading["init"] else ""
                self.ctx.evidence(
                    self, code=None, at=reading["site"], runtime_code="TL750",
                    message=(
                        f"{len(same)} of the DataLoader's {reading['workers']} workers start {_GLOBAL_NAMES[kind]} in the "
                        f"same state and draw from it: they draw the same random numbers{init}; seed each worker "
                        "differently, from `torch.utils.data.get_worker_info().seed`"
                    ),
                    data={"generator": kind, "workers": sorted(w for w in same if w is not None)},
                )
                break

    def _check(self, loader: DataLoader) -> None:
        self.checked.add(id(loader.dataset))
        dataset = loader.dataset
        if _reseeds(type(dataset)):
            return
        for owner, attribute, generator in _generators(dataset):
            if not _reads(type(owner), attribute):
                continue
            where = "the dataset" if owner is dataset else f"`{type(owner).__name__}` in the dataset"
            self.ctx.evidence(
                self, code=None, at=self.ctx.site(), runtime_code="TL750",
                message=(
                    f"the DataLoader's {loader.num_workers} worker{'s' * (loader.num_workers != 1)} each get a copy of "
                    f"{where}, with `{attribute}` (a {_public_name(type(generator))}) in the same "
                    "state: every worker draws the same random numbers, and each epoch starts over from that copy; "
                    "reseed it in a `worker_init_fn` from `torch.utils.data.get_worker_info().seed`"
                ),
                data={"dataset": type(dataset).__name__, "attribute": attribute, "workers": loader.num_workers},
            )
            return


def _public_name(cls: type) -> str:
    """`numpy.random.Generator`, not the module that defines it (`numpy.random._generator`,
    `torch._C`): the shortest public module on its dotted path that exports the class."""
    parts = cls.__module__.split(".")
    for end in range(1, len(parts) + 1):
        if any(part.startswith("_") for part in parts[:end]):
            break
        module = sys.modules.get(".".join(parts[:end]))
        if module is not None and getattr(module, cls.__name__, None) is cls:
            return f"{module.__name__}.{cls.__name__}"
    return f"{cls.__module__}.{cls.__name__}"


def _generator_types() -> tuple[type, ...]:
    kinds: list[type] = [random.Random, torch.Generator]
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        kinds += [numpy.random.Generator, numpy.random.RandomState]
    return tuple(kinds)


def _generators(dataset: Any) -> Iterable[tuple[Any, str, Any]]:
    """(owner, attribute, generator) for generators the dataset holds, and its attributes hold."""
    kinds = _generator_types()
    owners = [dataset]
    for value in _attributes(dataset):
        if isinstance(value, (list, tuple)):
            owners.extend(item for item in value if hasattr(item, "__dict__"))
        elif hasattr(value, "__dict__") and not isinstance(value, (type, torch.Tensor) + kinds):
            owners.append(value)
            owners.extend(item for item in getattr(value, "transforms", []) or [] if hasattr(item, "__dict__"))
    for owner in owners:
        for attribute, value in _items(owner):
            if isinstance(value, kinds) and type(value) is not type(random):
                yield owner, attribute, value


def _attributes(owner: Any) -> list[Any]:
    return [value for _, value in _items(owner)]


def _items(owner: Any) -> list[tuple[str, Any]]:
    try:
        return list(vars(owner).items())
    except TypeError:
        return []


def _code_names(cls: type, methods: Iterable[str]) -> set[str]:
    names: set[str] = set()
    for klass in cls.__mro__:
        for method in methods:
            function = klass.__dict__.get(method)
            code = getattr(function, "__code__", None)
            if code is not None:
                names.update(code.co_names)
                for const in code.co_consts:  # nested functions and comprehensions
                    if hasattr(const, "co_names"):
                        names.update(const.co_names)
    return names


def _reads(cls: type, attribute: str) -> bool:
    return attribute in _code_names(cls, SAMPLING_METHODS)


def _reseeds(cls: type) -> bool:
    methods = [name for klass in cls.__mro__ for name, value in vars(klass).items() if callable(value)]
    return any(name in _code_names(cls, methods) for name in RESEEDS)


#: How a report names each global generator.
_GLOBAL_NAMES = {"random": "Python's `random` generator", "numpy": "numpy's global generator (`np.random`)"}


def _forks(loader: DataLoader) -> bool:
    """The workers are forked from this process: what this process sets up, they inherit."""
    context = loader.multiprocessing_context
    method = context.get_start_method() if hasattr(context, "get_start_method") else context
    if method is None:
        method = multiprocessing.get_start_method(allow_none=True) or ("fork" if sys.platform.startswith("linux") else None)
    return method == "fork"


def _read_available(fd: int) -> list[str]:
    chunks = []
    try:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace").splitlines()


def _global_states() -> dict[str, str]:
    """A fingerprint of each global generator's state, without drawing from it."""
    states = {"random": hashlib.blake2b(repr(random.getstate()).encode(), digest_size=8).hexdigest()}
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        _, keys, position, *_ = numpy.random.get_state()
        states["numpy"] = hashlib.blake2b(keys.tobytes() + str(position).encode(), digest_size=8).hexdigest()
    return states


class _Fingerprinting:
    """The worker_init_fn the workers run: the program's own first, then, at the worker's first
    fetch, a line on the pipe with each global generator's state and whether the fetch drew
    from it. Never raises into the worker."""

    def __init__(self, program_init: Any, write: int) -> None:
        self.program_init = program_init
        self.write = write

    def __call__(self, worker_id: int) -> None:
        if self.program_init is not None:
            self.program_init(worker_id)
        try:
            self._watch_first_fetch(worker_id)
        except Exception:
            pass

    def _watch_first_fetch(self, worker_id: int) -> None:
        from torch.utils.data import get_worker_info

        info = get_worker_info()
        dataset = info.dataset if info is not None else None
        kind = type(dataset)
        owner = next((klass for klass in kind.__mro__ if "__getitem__" in vars(klass)), None) if dataset is not None else None
        if owner is None or owner is object:
            return  # an iterable dataset: not watched
        original = vars(owner)["__getitem__"]
        own_method = owner is kind
        write = self.write

        def first_fetch(own: Any, index: Any) -> Any:
            # This worker's copy of the class, put back at once.
            if own_method:
                kind.__getitem__ = original
            else:
                del kind.__getitem__
            before = _global_states()
            try:
                return original(own, index)
            finally:
                try:
                    after = _global_states()
                    states = {name: [digest, after.get(name) != digest] for name, digest in before.items()}
                    os.write(write, (json.dumps({"worker": worker_id, "states": states}) + "\n").encode())
                except Exception:
                    pass

        kind.__getitem__ = first_fetch
