"""The machinery behind ``--device meta`` (value-less); child process only.

- ``PlacementMode`` rewrites every placement to ``meta`` inside ``FakeTensorMode`` and turns
  "this needs real values" failures into ``SimulationLimit``.
- ``replacing_module_apply`` moves module parameters by replacing them: torch swaps
  FakeTensor parameters in place, which fails once anything holds a weak reference to them.

``--device fake-cuda`` computes values and lives in ``fake_cuda.py``.
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

from torchlint.runtime.devices.errors import SimulationLimit
from torchlint.runtime.op_names import op_name

Tensor = torch.Tensor

_NEEDS_VALUES = (DataDependentOutputException, DynamicOutputShapeException, UnsupportedOperatorException)


def _remaps(device: Any) -> bool:
    if device is None or isinstance(device, bool):
        return False
    if isinstance(device, int):
        return True  # device=0 means cuda:0
    if isinstance(device, str):
        return device.split(":", 1)[0] != "meta"
    if isinstance(device, torch.device):
        return device.type != "meta"
    return False


class PlacementMode(TorchFunctionMode):
    def __init__(self, mode: Any) -> None:
        super().__init__()
        self.mode = mode
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
                if _remaps(device):
                    kwargs = {**kwargs, "device": "meta"}
            elif func in self.constructors:
                kwargs = {**kwargs, "device": "meta"}
        try:
            return func(*args, **kwargs)
        except _NEEDS_VALUES as exc:
            raise SimulationLimit(f"`{op_name(func)}` needs tensor values, which {self.mode.name} does not compute", op_name(func)) from exc
        except FakeTensorDeviceMismatchError as exc:
            raise SimulationLimit(f"`{op_name(func)}` mixed a real CPU tensor into meta mode", op_name(func)) from exc
        except RuntimeError as exc:
            if "not supported for tensor subclasses" in str(exc):  # .numpy() of a fake tensor
                raise SimulationLimit(f"`{op_name(func)}` needs tensor values, which {self.mode.name} does not compute", op_name(func)) from exc
            raise

    def _retarget_to(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        if any(not isinstance(a, (Tensor, torch.dtype)) and _remaps(a) for a in args[1:]):
            args = args[:1] + tuple(a if isinstance(a, (Tensor, torch.dtype)) or not _remaps(a) else "meta" for a in args[1:])
        if _remaps(kwargs.get("device")):
            kwargs = {**kwargs, "device": "meta"}
        return args, kwargs


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
