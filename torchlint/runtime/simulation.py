"""The machinery behind the simulated device modes (fake-cuda, meta); child process only.

- ``PlacementMode`` rewrites CUDA placement to ``meta`` (every placement, in meta mode),
  checks that an operation's tensors share a device as CUDA would, and turns "this needs
  real values" failures into ``SimulationLimit``.
- ``patched_cuda_runtime`` makes the script take its GPU branch (``is_available()`` is True).
- ``replacing_module_apply`` moves module parameters by replacing them: torch swaps
  FakeTensor parameters in place, which fails once anything holds a weak reference to them.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensor,
    FakeTensorDeviceMismatchError,
    UnsupportedOperatorException,
)
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors

from torchlint.runtime.devices import SimulationLimit
from torchlint.runtime.probing import op_name

Tensor = torch.Tensor

# Operations CUDA accepts with tensors on different devices.
_CROSS_DEVICE_OK = {
    Tensor.to, Tensor.copy_, Tensor.__getitem__, Tensor.__setitem__, Tensor.index_put_,
    Tensor.type_as, Tensor.cpu, Tensor.cuda, Tensor.new_tensor, Tensor.new_zeros, Tensor.new_ones,
    Tensor.new_empty, Tensor.new_full, Tensor.set_, Tensor.__repr__, Tensor.__format__,
}

_NEEDS_VALUES = (DataDependentOutputException, DynamicOutputShapeException, UnsupportedOperatorException)


class PlacementMode(TorchFunctionMode):
    def __init__(self, placement: Any, mode: Any, *, check_devices: bool) -> None:
        super().__init__()
        self.placement = placement
        self.mode = mode
        self.check_devices = check_devices
        self.constructors = _device_constructors()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is Tensor.cuda:
            return Tensor.to(args[0], "meta", non_blocking=kwargs.get("non_blocking", False))
        if func is Tensor.to:
            args, kwargs = self._retarget_to(args, kwargs)
        elif func is Tensor.pin_memory:
            return args[0]
        elif func is Tensor.is_pinned:
            return False
        elif func is Tensor.__format__ and isinstance(args[0], FakeTensor) and args[0].dim() == 0:
            raise SimulationLimit("formatting a tensor's value needs real values", "format")
        else:
            device = kwargs.get("device")
            if device is not None:
                if self.placement.remaps(device):
                    kwargs = {**kwargs, "device": "meta"}
            elif self.placement.remap_all and func in self.constructors:
                kwargs = {**kwargs, "device": "meta"}
        if self.check_devices and func not in _CROSS_DEVICE_OK:
            self._check_same_device(func, args, kwargs)
        try:
            return func(*args, **kwargs)
        except _NEEDS_VALUES as exc:
            raise SimulationLimit(f"`{op_name(func)}` needs tensor values, which {self.mode.name} does not compute", op_name(func)) from exc
        except FakeTensorDeviceMismatchError as exc:
            if self.placement.remap_all:
                raise SimulationLimit(f"`{op_name(func)}` mixed a real CPU tensor into meta mode", op_name(func)) from exc
            raise RuntimeError(self.mode.explain(str(exc))) from None
        except RuntimeError as exc:
            if "not supported for tensor subclasses" in str(exc):  # .numpy() of a fake tensor
                raise SimulationLimit(f"`{op_name(func)}` needs tensor values, which {self.mode.name} does not compute", op_name(func)) from exc
            raise

    def _retarget_to(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        remaps = self.placement.remaps
        if any(not isinstance(a, (Tensor, torch.dtype)) and remaps(a) for a in args[1:]):
            args = args[:1] + tuple(a if isinstance(a, (Tensor, torch.dtype)) or not remaps(a) else "meta" for a in args[1:])
        if remaps(kwargs.get("device")):
            kwargs = {**kwargs, "device": "meta"}
        return args, kwargs

    def _check_same_device(self, func: Any, args: tuple, kwargs: dict) -> None:
        seen: set[str] = set()
        for value in (*args, *kwargs.values()):
            if isinstance(value, Tensor):
                _note_device(value, seen)
            elif isinstance(value, (list, tuple)):
                for item in value:
                    if isinstance(item, Tensor):
                        _note_device(item, seen)
        if len(seen) > 1 and not op_name(func).startswith("foreach"):
            names = " and ".join(sorted(self.mode.device_name(d) for d in seen))
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, {names}! (in {op_name(func)})")


def _note_device(tensor: Tensor, seen: set[str]) -> None:
    device = tensor.device.type
    # A zero-dimensional CPU tensor is a scalar: CUDA kernels accept it.
    if device != "cpu" or tensor.dim() != 0:
        seen.add(device)


def _noop() -> Any:
    def noop(*args: Any, **kwargs: Any) -> None:
        return None

    return noop


@contextlib.contextmanager
def patched_cuda_runtime() -> Iterator[None]:
    """Make ``torch.cuda`` look like one working GPU so the script takes its CUDA branch."""
    import torch.utils.data._utils.pin_memory as pin_memory_module

    replacements: list[tuple[Any, str, Any]] = [
        (torch.cuda, "is_available", lambda: True),
        (torch.cuda, "device_count", lambda: 1),
        (torch.cuda, "current_device", lambda: 0),
        (torch.cuda, "get_device_name", lambda *a, **k: "fake-cuda (simulated by torchlint)"),
        (torch.cuda, "get_device_capability", lambda *a, **k: (8, 0)),
        (torch.cuda, "is_bf16_supported", lambda *a, **k: True),
        (torch.cuda, "memory_allocated", lambda *a, **k: 0),
        (torch.cuda, "max_memory_allocated", lambda *a, **k: 0),
        (torch.cuda, "memory_reserved", lambda *a, **k: 0),
        (pin_memory_module, "pin_memory", lambda data, device=None: data),
    ]
    for name in ("synchronize", "empty_cache", "manual_seed", "manual_seed_all", "set_device", "reset_peak_memory_stats"):
        replacements.append((torch.cuda, name, _noop()))
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in replacements if hasattr(owner, name)]
    for owner, name, value in replacements:
        setattr(owner, name, value)
    try:
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


def _apply_by_replacing(self: torch.nn.Module, fn: Any, recurse: bool = True) -> torch.nn.Module:
    if recurse:
        for child in self.children():
            child._apply(fn)
    for key, param in self._parameters.items():
        if param is None:
            continue
        with torch.no_grad():
            moved = torch.nn.Parameter(fn(param), requires_grad=param.requires_grad)
            if param.grad is not None:
                moved.grad = fn(param.grad)
        self._parameters[key] = moved
    for key, buffer in self._buffers.items():
        if buffer is not None:
            self._buffers[key] = fn(buffer)
    return self


@contextlib.contextmanager
def replacing_module_apply() -> Iterator[None]:
    original = torch.nn.Module._apply
    torch.nn.Module._apply = _apply_by_replacing
    try:
        yield
    finally:
        torch.nn.Module._apply = original
