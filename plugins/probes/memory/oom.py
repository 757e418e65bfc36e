"""Running out of memory (TL738): recognise the error, and gather what held the memory.

Called once, when the program dies of the error: everything here reads the state at that
moment (the exception's traceback still holds the failing frames, hence the tensors and the
partial graph they reference).
"""

from __future__ import annotations

import re
import traceback
from typing import Any, Iterable

import torch
from torch import nn

from torchlint.probe import storages

#: torch's CPU allocator failing (a RuntimeError, not torch.OutOfMemoryError).
CPU_FAILURE = "DefaultCPUAllocator: can't allocate memory"
_TRIED = re.compile(r"Tried to allocate (\d+(?:\.\d+)? ?[KMGTP]?i?B)")
_TRIED_CPU = re.compile(r"you tried to allocate (\d+) bytes")


def out_of_memory(exc: BaseException) -> str | None:
    """``cuda``, ``cpu`` or ``device`` (another accelerator) when ``exc`` is running out of
    memory, else None."""
    text = str(exc)
    if isinstance(exc, torch.OutOfMemoryError) or (isinstance(exc, RuntimeError) and "out of memory" in text):
        if "CUDA" in text or "cuda" in text:
            return "cuda"
        return "cpu" if CPU_FAILURE in text else "device"
    if isinstance(exc, RuntimeError) and CPU_FAILURE in text:
        return "cpu"
    return None


def requested(message: str) -> str | None:
    """What the failing allocation asked for, as torch wrote it (`2.00 GiB`)."""
    found = _TRIED.search(message)
    if found:
        return found.group(1)
    found = _TRIED_CPU.search(message)
    if found:
        from .units import human_bytes

        return human_bytes(int(found.group(1)))
    return None


def failing_modules(exc: BaseException, names: dict[int, str]) -> list[tuple[str, str]]:
    """The modules the error went through, outermost first, as (path, class name): the
    ``Module._call_impl`` frames on its traceback."""
    found = []
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_name != "_call_impl":
            continue
        module = frame.f_locals.get("self")
        if isinstance(module, nn.Module):
            found.append((names.get(id(module)) or type(module).__name__, type(module).__name__))
    return found


def state_bytes(models: Iterable[nn.Module], optimizers: Iterable[Any]) -> dict[str, int]:
    """Bytes of parameters, of their gradients and of optimizer state (each storage once)."""
    parameters: dict[int, int] = {}
    gradients: dict[int, int] = {}
    state: dict[int, int] = {}
    with torch._C.DisableTorchFunction():
        for model in models:
            for parameter in model.parameters():
                _add(parameters, parameter)
                if parameter.grad is not None:
                    _add(gradients, parameter.grad)
        for optimizer in optimizers:
            for values in list(getattr(optimizer, "state", {}).values()):
                for value in values.values() if isinstance(values, dict) else ():
                    if isinstance(value, torch.Tensor):
                        _add(state, value)
    return {"parameters": sum(parameters.values()), "gradients": sum(gradients.values()), "optimizer_state": sum(state.values())}


def _add(found: dict[int, int], tensor: torch.Tensor) -> None:
    for pointer, nbytes in storages(tensor):
        found[pointer or id(tensor)] = nbytes


def cuda_totals() -> dict[str, int]:
    """The real GPU's counters at this moment (never called under fake-cuda)."""
    totals = {"allocated": torch.cuda.memory_allocated(), "reserved": torch.cuda.memory_reserved()}
    try:
        free, total = torch.cuda.mem_get_info()
        totals.update(free=free, total=total)
    except Exception:  # a device in a bad state after the failure: the counters above still tell
        pass
    return totals
