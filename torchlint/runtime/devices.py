"""Device modes for the child: cpu, cuda, fake-cuda and meta.

The built-in modes come from this module's ``torchlint_select_device`` hook implementation
(``trylast``), so a plugin can add a mode or replace one. A mode is a context manager with a
few facts the probes need (can tensors end up on different devices? are values computed?).

fake-cuda simulates CUDA placement on a CPU-only machine. Measured on torch 2.13 (see
FACTS.md): fake ``cuda`` tensors break ``.cuda()``, RNG, BatchNorm and autograd (SIGABRT), so
CUDA placement is remapped to ``meta`` inside ``FakeTensorMode`` and "meta" is read back as
``cuda:0`` in every message. Plain meta tensors (without FakeTensorMode) were tried and
rejected: their kernels let ``meta @ cpu``, ``linear`` and ``conv`` mixes through silently.
FakeTensorMode still lets ``conv2d`` and in-place ops mix devices, so this mode checks the
devices of every operation's tensors itself, as CUDA would.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Callable, Iterator

from torchlint.pluginmanager import hookimpl


class DeviceUnavailable(Exception):
    """The requested mode cannot run here; the message tells the user what to do instead."""


class SimulationLimit(BaseException):
    """A simulated mode reached an operation that needs real values (``.item()``, printing a
    number, a data-dependent shape). A BaseException so the target's ``except Exception``
    cannot swallow it; the run stops there and counts as success."""

    def __init__(self, message: str, op: str) -> None:
        super().__init__(message)
        self.op = op


class DeviceMode:
    name = "cpu"
    #: Where `file.py:entry` targets move the model and its example inputs (None: leave them).
    target_device: str | None = None
    #: Whether tensors can end up on different devices (worth tracking provenance).
    can_mismatch = False
    #: Whether tensor values exist (value checks are skipped when they do not).
    computes_values = True

    def check(self) -> None:
        """Raise DeviceUnavailable when this mode cannot run on this machine."""

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        yield

    def device_name(self, device: Any) -> str:
        return str(device)

    def explain(self, message: str) -> str:
        """A message from torch, with simulated device names mapped back to what the user asked for."""
        return message


class CpuMode(DeviceMode):
    pass


class CudaMode(DeviceMode):
    name = "cuda"
    target_device = "cuda"
    can_mismatch = True

    def check(self) -> None:
        import torch

        if not torch.cuda.is_available():
            build = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}, but no GPU is visible"
            raise DeviceUnavailable(
                f"--device cuda needs a GPU and torch {torch.__version__} is {build}; "
                "use --device fake-cuda to simulate CUDA placement on this machine"
            )


_META_WORD = re.compile(r"\bmeta\b")


class _Placement:
    """Decides where a requested device goes under a simulated mode."""

    def __init__(self, remap_all: bool) -> None:
        self.remap_all = remap_all

    def remaps(self, device: Any) -> bool:
        import torch

        if device is None or isinstance(device, bool):
            return False
        if isinstance(device, int):
            return True  # device=0 means cuda:0
        if isinstance(device, str):
            kind = device.split(":", 1)[0]
        elif isinstance(device, torch.device):
            kind = device.type
        else:
            return False
        return kind == "cuda" or (self.remap_all and kind != "meta")


class FakeCudaMode(DeviceMode):
    name = "fake-cuda"
    target_device = "cuda"
    can_mismatch = True
    computes_values = False
    remap_all = False

    def device_name(self, device: Any) -> str:
        text = str(device)
        return "cuda:0" if text == "meta" else text

    def explain(self, message: str) -> str:
        return _META_WORD.sub("cuda:0", message)

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        from torch._subclasses.fake_tensor import FakeTensorMode

        from torchlint.runtime.simulation import PlacementMode, patched_cuda_runtime, replacing_module_apply

        placement = PlacementMode(_Placement(self.remap_all), self, check_devices=not self.remap_all)
        # Built before torch.cuda is patched: building it imports torch._dynamo, which indexes
        # torch.cuda's functions and refuses to see the same stand-in function twice.
        fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
        with contextlib.ExitStack() as stack:
            if not self.remap_all:
                stack.enter_context(patched_cuda_runtime())
            stack.enter_context(replacing_module_apply())
            stack.enter_context(fake_mode)
            stack.enter_context(placement)
            yield


class MetaMode(FakeCudaMode):
    """Every tensor on ``meta``: shapes and autograd structure without any compute."""

    name = "meta"
    target_device = None
    can_mismatch = False
    remap_all = True

    def device_name(self, device: Any) -> str:
        return str(device)

    def explain(self, message: str) -> str:
        return message


BUILTIN_MODES: dict[str, Callable[[], DeviceMode]] = {
    "cpu": CpuMode,
    "cuda": CudaMode,
    "fake-cuda": FakeCudaMode,
    "meta": MetaMode,
}


@hookimpl(trylast=True)
def torchlint_select_device(requested: str) -> DeviceMode | None:
    factory = BUILTIN_MODES.get(requested)
    return factory() if factory else None
