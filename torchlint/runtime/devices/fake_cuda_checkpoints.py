"""Checkpoints under ``--device fake-cuda``: saved as a GPU run saves them, loaded back onto
simulated CUDA. Child process only."""

from __future__ import annotations

import contextlib
import functools
from typing import TYPE_CHECKING, Any, Iterator

import torch

if TYPE_CHECKING:
    from torchlint.runtime.devices.fake_cuda import SimulatedCuda


@contextlib.contextmanager
def checkpoints_keep_placement(sim: SimulatedCuda) -> Iterator[None]:
    """``torch.save`` tags the storages of simulated tensors ``cuda:N``, as a GPU run's file
    would be (so the checkpoint probe sees a CUDA checkpoint), and ``torch.load`` restores a
    storage whose location is CUDA (saved there, or ``map_location="cuda"``) onto simulated
    CUDA instead of asking the CPU-only torch for a real CUDA storage."""
    import torch.serialization as serialization

    def tagger(storage: Any) -> str | None:
        if not sim.saving:
            return None
        index = sim.saving.get(storage.data_ptr())
        return None if index is None else f"cuda:{index}"

    def deserializer(storage: Any, location: str) -> Any:
        if not location.startswith("cuda"):
            return None
        index = sim.parse(location)
        sim.restored[storage.data_ptr()] = index
        return storage

    original_save, original_load = torch.save, torch.load

    def save(*args: Any, **kwargs: Any) -> Any:
        sim.saving = sim.storage_places()
        try:
            return original_save(*args, **kwargs)
        finally:
            sim.saving = {}

    def load(*args: Any, **kwargs: Any) -> Any:
        sim.restored = {}
        try:
            return original_load(*args, **kwargs)
        finally:
            sim.restored = {}

    def storage_cuda(storage: Any, device: Any = None, non_blocking: bool = False) -> Any:
        # `map_location=lambda storage, loc: storage.cuda()`: stay on the CPU, restored as CUDA
        sim.restored[storage.data_ptr()] = sim.current if device is None else sim.parse(device)
        return storage

    untyped_storage = torch.storage._StorageBase
    original_storage_cuda = untyped_storage.__dict__["cuda"]
    entry = (0, tagger, deserializer)  # priority 0: asked before the built-in cpu (10) and cuda (20)
    serialization._package_registry.insert(0, entry)
    untyped_storage.cuda = storage_cuda
    torch.save = serialization.save = functools.wraps(original_save)(save)
    torch.load = serialization.load = functools.wraps(original_load)(load)
    try:
        yield
    finally:
        torch.save, serialization.save = original_save, original_save
        torch.load, serialization.load = original_load, original_load
        untyped_storage.cuda = original_storage_cuda
        with contextlib.suppress(ValueError):
            serialization._package_registry.remove(entry)
