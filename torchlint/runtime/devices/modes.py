"""Device modes for the child: cpu, cuda, fake-cuda and meta.

The built-in modes come from this module's ``torchlint_select_device`` hook implementation
(``trylast``), so a plugin can add a mode or replace one. A mode is a context manager with a
few facts the probes need (can tensors end up on different devices? are values computed?
are timings those of the device the user asked for?).

fake-cuda simulates CUDA on a CPU-only machine with real values: tensors placed on CUDA are
CPU tensors that report ``cuda:N`` and obey CUDA's device rules (``fake_cuda.py``), so
DataLoaders, ``.item()`` and every probe work as on the CPU. meta is the value-less mode
fake-cuda used to be (``FakeTensorMode``, every tensor on ``meta``): shapes and autograd
structure only, and the run stops at the first operation that needs a value.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from torchlint.pluginmanager import hookimpl
from torchlint.runtime.devices.errors import DeviceUnavailable, SimulationLimit  # noqa: F401 (also imported from here)


class DeviceMode:
    name = "cpu"
    #: Where `file.py:entry` targets move the model and its example inputs (None: leave them).
    target_device: str | None = None
    #: Whether tensors can end up on different devices (worth tracking provenance).
    can_mismatch = False
    #: Whether tensor values exist (value checks are skipped when they do not).
    computes_values = True
    #: Whether wall-clock timings measure the device the user asked for (not a simulation).
    times_are_real = True

    def configure(self, options: dict[str, Any]) -> None:
        """Called with the run's options (``--fake-devices``...) before ``active()``."""

    def outcome_data(self) -> dict[str, Any]:
        """What this mode adds to the run's outcome (JSON-able), read after the run."""
        return {}

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

    def type_name(self, tensor: Any) -> str:
        """`tensor.type()` as the program would see it (`torch.cuda.FloatTensor`), for messages
        that imitate torch's own."""
        return tensor.type()


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


class FakeCudaMode(DeviceMode):
    """CUDA placement simulated with real values (see ``torchlint.runtime.devices.fake_cuda``)."""

    name = "fake-cuda"
    target_device = "cuda"
    can_mismatch = True
    times_are_real = False

    def __init__(self) -> None:
        self.device_count = 1
        self.sim: Any = None

    def configure(self, options: dict[str, Any]) -> None:
        self.device_count = int(options.get("fake_devices") or 1)

    @property
    def syncs(self) -> Any:
        """The host-device syncs counted so far (``SyncLog``), None before the run."""
        return self.sim.syncs if self.sim is not None else None

    def outcome_data(self) -> dict[str, Any]:
        return {"host_syncs": self.sim.syncs.as_dict()} if self.sim is not None else {}

    def type_name(self, tensor: Any) -> str:
        # Asked from hooks torch calls outside the simulation's mode (autograd's unpack hooks).
        import torch

        with torch._C.DisableTorchFunction():
            name = tensor.type()
        if self.sim is not None and self.sim.index_of(tensor) is not None and name.startswith("torch."):
            return "torch.cuda." + name[len("torch."):]
        return name

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        from torchlint.runtime.devices.fake_cuda import SimulatedCuda, simulating

        self.sim = SimulatedCuda(self.device_count)
        with simulating(self.sim):
            yield


class MetaMode(DeviceMode):
    """Every tensor on ``meta`` inside ``FakeTensorMode``: shapes and autograd structure
    without any compute (the value-less mode fake-cuda used to be)."""

    name = "meta"
    computes_values = False
    times_are_real = False

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        from torch._subclasses.fake_tensor import FakeTensorMode

        from torchlint.runtime.devices.meta import PlacementMode, replacing_module_apply

        placement = PlacementMode(self)
        fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
        with replacing_module_apply(), fake_mode, placement:
            yield


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
