"""What ``torch.cuda``, ``torch.accelerator`` and friends answer under ``--device fake-cuda``.

``patched_cuda_runtime`` makes ``torch.cuda``, ``torch.accelerator`` and
``torch.backends.cudnn`` report ``device_count`` working GPUs (names, properties, memory,
RNG state, events, streams, ``torch.Generator(device="cuda")``), so a script takes its GPU
branch. ``data_parallel_on_one_device`` runs ``nn.DataParallel`` without CUDA's scatter
kernels. Child process only; the placement itself lives in ``fake_cuda.py``.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator

import torch

if TYPE_CHECKING:
    from torchlint.runtime.devices.fake_cuda import SimulatedCuda

Tensor = torch.Tensor

#: What ``get_device_properties`` and ``mem_get_info`` report: an 80 GiB, compute 8.0 device.
TOTAL_MEMORY = 80 * 1024**3
DEVICE_NAME = "NVIDIA fake-cuda (simulated by torchlint)"


@dataclass(frozen=True)
class DeviceProperties:
    """What ``torch.cuda.get_device_properties`` reports for a simulated device."""

    name: str = DEVICE_NAME
    major: int = 8
    minor: int = 0
    total_memory: int = TOTAL_MEMORY
    multi_processor_count: int = 108
    is_integrated: bool = False
    is_multi_gpu_board: bool = False
    warp_size: int = 32
    L2_cache_size: int = 40 * 1024**2
    gcnArchName: str = "NVIDIA A100-SXM4-80GB"


class Event:
    """``torch.cuda.Event``: wall-clock timing on the host (every simulated kernel is synchronous)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.enable_timing = enable_timing
        self.when: float | None = None

    def record(self, stream: Any = None) -> None:
        self.when = time.perf_counter()

    def wait(self, stream: Any = None) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: Event) -> float:
        if self.when is None or end.when is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end.when - self.when) * 1000.0


class Stream:
    """``torch.cuda.Stream``: every simulated operation is synchronous, so waiting is free."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device = torch.device("cuda", 0)
        self.priority = priority

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True

    def is_capturing(self) -> bool:
        return False

    def wait_stream(self, stream: Any) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass

    def record_event(self, event: Any = None) -> Event:
        event = event or Event()
        event.record()
        return event

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


class _AnyGenerator(type(torch._C.Generator)):
    """``isinstance(g, torch.Generator)`` stays true for generators made before the stand-in."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, torch._C.Generator)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, torch._C.Generator)


def _generator_class(sim: SimulatedCuda) -> type:
    class Generator(torch._C.Generator, metaclass=_AnyGenerator):
        """``torch.Generator(device="cuda")``: a CPU generator (CUDA tensors are computed on
        the CPU) that reports the simulated device."""

        def __new__(cls, device: Any = "cpu") -> Any:
            return super().__new__(cls, "cpu")

        def __init__(self, device: Any = "cpu") -> None:
            index = sim.parse(device)
            self._torchlint_device = torch.device("cuda", index) if index is not None and index >= 0 else torch.device("cpu")

        @property
        def device(self) -> torch.device:
            return self._torchlint_device

    return Generator


#: The legacy tensor types `torch.cuda` exposes (`Tensor = torch.cuda.FloatTensor if cuda else
#: torch.FloatTensor` in older training scripts), by name.
LEGACY_TYPES = {
    "FloatTensor": torch.float32, "DoubleTensor": torch.float64, "HalfTensor": torch.float16,
    "BFloat16Tensor": torch.bfloat16, "LongTensor": torch.int64, "IntTensor": torch.int32,
    "ShortTensor": torch.int16, "CharTensor": torch.int8, "ByteTensor": torch.uint8, "BoolTensor": torch.bool,
}


class _LegacyCudaType(type):
    """``isinstance(t, torch.cuda.FloatTensor)``: a simulated-CUDA tensor of that dtype."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.is_cuda and obj.dtype == cls.dtype


def _legacy_type(name: str, dtype: torch.dtype) -> type:
    """``torch.cuda.FloatTensor(...)``: the real one needs CUDA kernels; this one makes the
    same tensor on the simulated device (sizes, a torch.Size, or data to copy)."""

    def __new__(cls: type, *args: Any, device: Any = None) -> Tensor:
        if not args:
            return torch.empty(0, dtype=dtype, device="cuda")
        if len(args) == 1 and isinstance(args[0], Tensor):
            return args[0].to("cuda", dtype)
        if len(args) == 1 and not isinstance(args[0], (int, torch.Size)):
            return torch.tensor(args[0], dtype=dtype, device="cuda")
        sizes = args[0] if isinstance(args[0], torch.Size) else args
        return torch.empty(sizes, dtype=dtype, device="cuda")

    return _LegacyCudaType(name, (), {"__new__": __new__, "__module__": "torch.cuda", "dtype": dtype,
                                      "is_cuda": True, "is_sparse": False})


def _runtime_replacements(sim: SimulatedCuda) -> list[tuple[Any, str, Any]]:
    """(owner, attribute, stand-in) for every function a script uses to ask about the GPU."""
    import torch.utils.data._utils.pin_memory as pin_memory_module

    def is_available() -> bool:
        return True

    def device_count() -> int:
        return sim.device_count

    def current_device() -> int:
        return sim.current

    def set_device(device: Any) -> None:
        index = sim.parse(device)
        if index is not None and index >= 0:
            sim.current = index

    def get_device_name(device: Any = None) -> str:
        return DEVICE_NAME

    def get_device_capability(device: Any = None) -> tuple[int, int]:
        return (8, 0)

    def get_device_properties(device: Any = None) -> DeviceProperties:
        return DeviceProperties()

    def memory_allocated(device: Any = None) -> int:
        return sim.allocated(device)

    def max_memory_allocated(device: Any = None) -> int:
        return sim.max_allocated(device)

    def memory_reserved(device: Any = None) -> int:
        return sim.allocated(device)

    def max_memory_reserved(device: Any = None) -> int:
        return sim.max_allocated(device)

    def mem_get_info(device: Any = None) -> tuple[int, int]:
        return TOTAL_MEMORY - sim.allocated(device), TOTAL_MEMORY

    def reset_peak_memory_stats(device: Any = None) -> None:
        sim.peak.clear()

    def synchronize(device: Any = None) -> None:
        sim.syncs.note("synchronize")

    def current_accelerator(check_available: bool = False) -> torch.device:
        return torch.device("cuda")

    def current_stream(device: Any = None) -> Stream:
        return Stream()

    def stream(stream: Any = None) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext(stream)

    def is_bf16_supported(including_emulation: bool = True) -> bool:
        return True

    def cudnn_version() -> int:
        return 90100

    def pin_memory(data: Any, device: Any = None) -> Any:
        return data

    # CUDA tensors draw from the CPU generator here; a CUDA state of its own would be a lie
    # that torch.compile's RNG save/restore would faithfully replay.
    def get_rng_state(device: Any = "cuda") -> Tensor:
        return torch.get_rng_state()

    def get_rng_state_all() -> list[Tensor]:
        return [torch.get_rng_state() for _ in range(sim.device_count)]

    class device:  # noqa: N801 - stands in for torch.cuda.device
        def __init__(self, device: Any) -> None:
            self.index = sim.parse(device)
            self.previous = sim.current

        def __enter__(self) -> None:
            self.previous = sim.current
            if self.index is not None and self.index >= 0:
                sim.current = self.index

        def __exit__(self, *exc: Any) -> None:
            sim.current = self.previous

    def noop(name: str) -> Callable[..., None]:
        # One function object per name: torch._dynamo indexes torch.cuda's functions by
        # identity and refuses to see the same stand-in twice.
        def stand_in(*args: Any, **kwargs: Any) -> None:
            return None

        stand_in.__name__ = name
        return stand_in

    parse_to = torch._C._nn._parse_to

    def parse_to_device(*args: Any, **kwargs: Any) -> Any:
        # How `nn.Module.to` reads its arguments. A bare index (`model.to(local_rank)`) names
        # the current accelerator's device in C++, which a CPU build has not got ("Cannot
        # access accelerator device"); a `device=` keyword is one the simulation's function
        # mode turns into the CPU, as it does for factories (`model.to(device=device)` stayed
        # on the CPU). Both are passed on as a positional CUDA device.
        if not args and "device" in kwargs:
            kwargs = dict(kwargs)
            args = (kwargs.pop("device"),)
        if args and _is_index(args[0]):
            args = (torch.device("cuda", args[0]), *args[1:])
        return parse_to(*args, **kwargs)

    cuda = torch.cuda
    accelerator = torch.accelerator
    replacements: list[tuple[Any, str, Any]] = [
        (torch._C._nn, "_parse_to", parse_to_device),
        (cuda, "is_available", is_available),
        (cuda, "is_initialized", lambda: True),
        (cuda, "device_count", device_count),
        (cuda, "current_device", current_device),
        (cuda, "set_device", set_device),
        (cuda, "device", device),
        (cuda, "get_device_name", get_device_name),
        (cuda, "get_device_capability", get_device_capability),
        (cuda, "get_device_properties", get_device_properties),
        (cuda, "is_bf16_supported", is_bf16_supported),
        (cuda, "memory_allocated", memory_allocated),
        (cuda, "max_memory_allocated", max_memory_allocated),
        (cuda, "memory_reserved", memory_reserved),
        (cuda, "max_memory_reserved", max_memory_reserved),
        (cuda, "mem_get_info", mem_get_info),
        (cuda, "reset_peak_memory_stats", reset_peak_memory_stats),
        (cuda, "reset_max_memory_allocated", reset_peak_memory_stats),
        (cuda, "synchronize", synchronize),
        (cuda, "Event", Event),
        (cuda, "Stream", Stream),
        (cuda, "current_stream", current_stream),
        (cuda, "default_stream", current_stream),
        (cuda, "stream", stream),
        (cuda, "is_current_stream_capturing", lambda: False),
        (cuda, "get_rng_state", get_rng_state),
        (cuda, "get_rng_state_all", get_rng_state_all),
        (accelerator, "is_available", lambda: True),
        (accelerator, "current_accelerator", current_accelerator),
        (accelerator, "device_count", lambda: sim.device_count),
        (accelerator, "current_device_index", current_device),
        (accelerator, "current_device_idx", lambda: sim.current),
        (accelerator, "set_device_index", set_device),
        (accelerator, "set_device_idx", lambda device: set_device(device)),
        (accelerator, "synchronize", lambda device=None: synchronize(device)),
        (accelerator, "current_stream", lambda device=None: Stream()),
        (accelerator, "memory_allocated", lambda device=None: sim.allocated(device)),
        (accelerator, "max_memory_allocated", lambda device=None: sim.max_allocated(device)),
        (accelerator, "get_memory_info", lambda device=None: mem_get_info(device)),
        (torch.backends.cudnn, "is_available", lambda: True),
        (torch.backends.cudnn, "version", cudnn_version),
        # nn.RNN asks before packing its weights for cuDNN, which this CPU build has not got
        (torch.backends.cudnn, "is_acceptable", lambda tensor: False),
        (pin_memory_module, "pin_memory", pin_memory),
        (torch, "Generator", _generator_class(sim)),
    ]
    replacements += [(cuda, name, _legacy_type(name, dtype)) for name, dtype in LEGACY_TYPES.items()]
    for name in ("empty_cache", "manual_seed", "manual_seed_all", "seed", "seed_all", "ipc_collect", "init",
                 "set_rng_state", "set_rng_state_all"):
        replacements.append((cuda, name, noop(name)))
    replacements.append((accelerator, "empty_cache", noop("empty_cache")))
    return [(owner, name, value) for owner, name, value in replacements if hasattr(owner, name)]


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@contextlib.contextmanager
def patched_cuda_runtime(sim: SimulatedCuda) -> Iterator[None]:
    """Make torch report ``sim.device_count`` working GPUs so the script takes its CUDA branch."""
    replacements = _runtime_replacements(sim)
    saved = [(owner, name, owner.__dict__.get(name, getattr(owner, name))) for owner, name, _ in replacements]
    for owner, name, value in replacements:
        setattr(owner, name, value)
    try:
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


def _to_device(value: Any, device: torch.device) -> Any:
    if isinstance(value, Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value) if not hasattr(value, "_fields") \
            else type(value)(*(_to_device(v, device) for v in value))
    if isinstance(value, dict):
        return type(value)((k, _to_device(v, device)) for k, v in value.items())
    return value


@contextlib.contextmanager
def data_parallel_on_one_device() -> Iterator[None]:
    """``nn.DataParallel`` scatters with CUDA's communication kernels, which a CPU build lacks:
    run the whole batch on ``device_ids[0]`` instead (the same numbers, except that BatchNorm
    sees one batch instead of one slice per GPU), after the same placement check."""
    from itertools import chain

    parallel = torch.nn.DataParallel
    original = parallel.forward

    def forward(self: Any, *inputs: Any, **kwargs: Any) -> Any:
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for tensor in chain(self.module.parameters(), self.module.buffers()):
            if tensor.device != self.src_device_obj:
                raise RuntimeError("module must have its parameters and buffers on device "
                                   f"{self.src_device_obj} (device_ids[0]) but found one of them on device: {tensor.device}")
        return self.module(*_to_device(inputs, self.src_device_obj), **_to_device(kwargs, self.src_device_obj))

    parallel.forward = forward
    try:
        yield
    finally:
        parallel.forward = original
