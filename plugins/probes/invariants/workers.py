"""DataLoader workers that all start from one copy of the dataset's random generator (TL750).

torch reseeds the global generators of ``random``, numpy and torch in each worker; a
generator the dataset holds as an attribute is copied into each worker as it is, and every
worker draws the same numbers. Checked when a DataLoader with workers starts iterating (a
patched ``DataLoader.__iter__``), on the dataset and the objects it holds one level down (its
transforms), and only for a generator the code that makes samples reads
(``__getitem__``, ``__iter__``, a transform's ``__call__``/``forward``), and only when neither
a ``worker_init_fn`` nor the dataset itself reseeds it (``get_worker_info``).
"""

from __future__ import annotations

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
        self.patches = Patches()
        self.patches.replace(DataLoader, "__iter__", self._iterating)

    def uninstall(self) -> None:
        self.patches.restore()

    def _iterating(self, original: Any) -> Any:
        check = self.guarded(self._check)

        def iterate(loader: DataLoader) -> Any:
            if loader.num_workers > 0 and loader.worker_init_fn is None and id(loader.dataset) not in self.checked:
                check(loader)
            return original(loader)

        return iterate

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
