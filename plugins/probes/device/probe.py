"""Device probe: confirms TL201 and reports runtime device mismatches (TL701).

When tensors can end up on different devices (cuda, fake-cuda), every tensor made by a
factory remembers where it was created, and results of operations inherit the origin of an
input on the same device. When an operation fails with tensors on two devices, the evidence
names the operation's line and the line that created the CPU tensor, e.g. "add at
models.py:17 mixed cuda:0 and cpu; the cpu tensor was created at models.py:16
`torch.randn(...)` without device=". PyTorch's own error names only the first line.

On the CPU nothing can be misplaced; the probe then only notes which factory lines ran.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._device import _device_constructors

from torchlint.probe import Probe, Site, op_name, tensors_in

Tensor = torch.Tensor
_MOVES = {Tensor.cpu, Tensor.to}


@dataclass(frozen=True)
class Origin:
    site: Site | None
    how: str  # "torch.randn(...) without device=", "moved to cpu by .cpu()"
    without_device: bool


class DeviceProbe(Probe):
    name = "device"
    order = 10
    confirms = ("TL201",)
    runtime_code = "TL701"
    summary = "device mismatches, with the line that created the misplaced tensor"

    def install(self) -> None:
        self.tracking = self.ctx.device.can_mismatch
        self.constructors = _device_constructors()
        self.origins: dict[int, tuple[weakref.ref, Origin]] = {}

    def watches(self, func: Any) -> bool:
        return self.tracking or func in self.constructors

    def after(self, func: Any, args: tuple, kwargs: dict, result: Any) -> None:
        if func in self.constructors:
            self._created(func, kwargs, result)
        elif self.tracking and isinstance(result, Tensor):
            self._inherit(func, args, kwargs, result)

    def _created(self, func: Any, kwargs: dict, result: Any) -> None:
        without_device = kwargs.get("device") is None
        site = self.ctx.site()
        if without_device:
            note = "ran with every tensor on the CPU, so placement could not go wrong; check it with --device fake-cuda" \
                if not self.tracking else "no operation mixed its result with a tensor on another device"
            self.ctx.observed(self, "TL201", site, note)
        if self.tracking and isinstance(result, Tensor):
            how = f"`torch.{op_name(func)}(...)`" + (" without device=" if without_device else f" with device={kwargs['device']!r}")
            self._remember(result, Origin(site, how, without_device))

    def _inherit(self, func: Any, args: tuple, kwargs: dict, result: Tensor) -> None:
        if func in _MOVES and result.device.type == "cpu" and isinstance(args[0], Tensor) and args[0].device.type != "cpu":
            self._remember(result, Origin(self.ctx.site(), f"moved to the CPU by `.{op_name(func)}()`", False))
            return
        if not self.origins:
            return
        origins = self.origins
        for tensor in tensors_in(args, kwargs):
            entry = origins.get(id(tensor))
            if entry is not None and entry[0]() is tensor and tensor.device == result.device:
                self._remember(result, entry[1])
                return

    def _remember(self, tensor: Tensor, origin: Origin) -> None:
        key = id(tensor)
        origins = self.origins
        try:
            ref = weakref.ref(tensor, lambda _ref, key=key: origins.pop(key, None))
        except TypeError:
            return
        origins[key] = (ref, origin)

    def failed(self, func: Any, args: tuple, kwargs: dict, exc: BaseException) -> None:
        if not self.tracking or not isinstance(exc, RuntimeError):
            return
        tensors = [t for t in tensors_in(args, kwargs) if t.device.type != "cpu" or t.dim() != 0]
        # CUDA's order: the accelerator first, then the CPU ("cuda:0 and cpu").
        devices = sorted({self.ctx.device_name(t.device) for t in tensors}, key=lambda name: (name == "cpu", name))
        if len(devices) < 2:
            return
        at = self.ctx.site()
        op = op_name(func)
        where = f" at {at.short()}" if at else ""
        offenders = [t for t in tensors if t.device.type == "cpu"]
        origins = []
        for tensor in offenders:
            entry = self.origins.get(id(tensor))
            if entry is not None and entry[0]() is tensor:
                origins.append(entry[1])
        message = f"`{op}`{where} mixed {' and '.join(devices)}"
        if origins:
            origin = origins[0]
            created = f" at {origin.site.short()} `{self.ctx.source(origin.site)}`" if origin.site else ""
            message += f"; the cpu tensor was created{created}: {origin.how}"
        elif offenders:
            message += "; the cpu tensor was not made by a torch factory here (loaded or passed in?): move it with .to(device)"
        sites = [o.site for o in origins if o.without_device]
        code = "TL201" if sites else None
        self.ctx.evidence(
            self,
            code=code,
            at=at,
            sites=sites,
            message=message,
            data={
                "op": op,
                "devices": devices,
                "op_at": [at.path, at.line] if at else None,
                "created_at": [[o.site.path, o.site.line] for o in origins if o.site],
            },
        )
        self.ctx.explain(exc, code or self.runtime_code)


PROBE = DeviceProbe
