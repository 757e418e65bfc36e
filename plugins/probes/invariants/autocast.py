"""A training forward that runs outside the autocast region its step sets up (TL754).

Mixed precision is on when a step enters an enabled ``torch.autocast`` region or scales its
loss with an enabled ``GradScaler``. Inside the region, matrix products (``linear``, ``matmul``,
convolutions) run in the autocast dtype; one that runs with gradients on and float32
inputs outside any autocast region for its device, in such a step, was left in float32: the
forward was computed before the ``with torch.autocast(...)`` block (which then wraps only the
loss), or in another thread (autocast state is per thread: ``nn.DataParallel``'s replicas).
A region entered with ``enabled=False`` is a deliberate float32 block and is left alone.

The regions are tracked by patching ``torch.amp.autocast``'s ``__enter__``/``__exit__``, not
read from ``torch.is_autocast_enabled``: under ``--device fake-cuda`` CUDA autocast is a
no-op whose state torch reports as off.
"""

from __future__ import annotations

import threading
from typing import Any

import torch
import torch.nn.functional as F
from torch.optim import optimizer as optimizer_hooks

from torchlint.probe import Patches, Probe, Site, op_name, tensors_in

_is_compiling = torch.compiler.is_compiling

#: The operations autocast runs in lower precision that carry a training forward's work.
MATRIX_PRODUCTS = {
    F.linear, torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.mm, torch.Tensor.mm, torch.bmm,
    torch.Tensor.bmm, torch.addmm, torch.baddbmm, F.conv1d, F.conv2d, F.conv3d,
}


class AutocastProbe(Probe):
    name = "autocast"
    order = 60
    runtime_code = "TL754"
    summary = "matrix products left in float32 outside the autocast region of their step"

    def install(self) -> None:
        self.local = threading.local()
        self.entered_in_step: Site | None = None  # the first enabled region of this step
        self.scaled_in_step = False
        self.outside: tuple[Site | None, str] | None = None  # the first float32 product of this step
        self.reported = False
        self.patches = Patches()
        autocast = torch.amp.autocast_mode.autocast
        note_enter, note_exit = self.guarded(self._entered), self.guarded(self._left)

        def entering(enter: Any) -> Any:
            def patched_enter(region: Any) -> Any:
                result = enter(region)
                if not _is_compiling():  # a region inside compiled code is Dynamo's to trace
                    note_enter(region)
                return result

            return patched_enter

        def leaving(leave: Any) -> Any:
            def patched_exit(region: Any, *args: Any) -> Any:
                if not _is_compiling():
                    note_exit(region)
                return leave(region, *args)

            return patched_exit

        self.patches.replace(autocast, "__enter__", entering)
        self.patches.replace(autocast, "__exit__", leaving)
        self.patches.replace(torch.amp.GradScaler, "scale", self._scaling)
        self.handle = optimizer_hooks.register_optimizer_step_pre_hook(self.guarded(self._step))

    def _scaling(self, original_scale: Any) -> Any:
        note_scaled = self.guarded(self._scaled)

        def scale(grad_scaler: Any, outputs: Any) -> Any:
            # A disabled scaler (``enabled=False``, or a CUDA scaler that found no CUDA and
            # disabled itself, as nanoGPT's does on a CPU) returns the loss as it is: no mixed
            # precision there.
            if grad_scaler.is_enabled():
                note_scaled()
            return original_scale(grad_scaler, outputs)

        return scale

    def uninstall(self) -> None:
        self.patches.restore()
        self.handle.remove()

    # -- regions -------------------------------------------------------------------------------
    def _regions(self) -> list[tuple[str, bool]]:
        regions = getattr(self.local, "regions", None)
        if regions is None:
            regions = self.local.regions = []
        return regions

    def _entered(self, region: Any) -> None:
        enabled = bool(getattr(region, "_enabled", True))
        self._regions().append((str(getattr(region, "device", "")), enabled))
        if enabled and self.entered_in_step is None:
            self.entered_in_step = self.ctx.site()

    def _left(self, region: Any) -> None:
        regions = self._regions()
        if regions:
            regions.pop()

    def _scaled(self) -> None:
        self.scaled_in_step = True

    # -- products ------------------------------------------------------------------------------
    def watches(self, func: Any) -> bool:
        return func in MATRIX_PRODUCTS

    def before(self, func: Any, args: tuple, kwargs: dict) -> None:
        if self.reported or self.outside is not None or not torch.is_grad_enabled():
            return
        tensors = list(tensors_in(args, kwargs))
        if not tensors or not any(t.requires_grad for t in tensors) or any(t.dtype != torch.float32 for t in tensors):
            return
        device = tensors[0].device.type
        for region_device, enabled in reversed(self._regions()):
            if region_device == device:
                return  # inside a region for this device: enabled, or deliberately disabled
        self.outside = (self.ctx.site(), op_name(func))

    def _step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        mixed = self.entered_in_step is not None or self.scaled_in_step
        if mixed and self.outside is not None and not self.reported:
            self.reported = True
            site, op = self.outside
            how = (f"the autocast region entered at {self.entered_in_step.short()}" if self.entered_in_step
                   else "the step's GradScaler")
            self.ctx.evidence(
                self, code=None, at=site, runtime_code="TL754",
                message=(
                    f"`{op}` ran in float32 with gradients on, outside any autocast region, in a training step that uses "
                    f"mixed precision ({how}): the forward was computed before the `with torch.autocast(...)` block, or in "
                    "another thread (autocast is per thread); put the model's forward inside the region"
                ),
                sites=[self.entered_in_step] if self.entered_in_step else [],
                data={"op": op},
            )
        self.entered_in_step, self.scaled_in_step, self.outside = None, False, None
