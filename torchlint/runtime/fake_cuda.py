"""Simulated CUDA with real values (``--device fake-cuda``); child process only.

Every tensor stays a real CPU tensor. A tensor placed on CUDA (a factory with
``device="cuda"``, ``.cuda()``, ``.to(device)``, ``module.to``/``module.cuda``, or any
operation with a simulated-CUDA input) is entered in a side table, keyed by ``id`` with a
weak reference so that a dead tensor's id can be reused safely. ``FakeCudaFunctionMode``
reads that table on every torch call, and then:

- reports ``t.device == cuda:N``, ``t.is_cuda``, ``t.get_device()`` for simulated tensors;
- raises CUDA's own error when an operation mixes devices (a 0-dim CPU tensor is a scalar
  and allowed, as CUDA allows it);
- raises CUDA's ``TypeError`` for ``.numpy()``; lets ``.item()``, ``.tolist()``, ``float()``
  and printing through and counts them as host-device syncs (``SyncLog``);
- marks the outputs of operations on simulated tensors; ``.cpu()``/``.to("cpu")`` copies
  out of the table.

Why a side table and not a tensor subclass (``_make_subclass`` with ``__torch_function__``),
measured on torch 2.13: gradients computed by the autograd engine come back as plain tensors,
``nn.Parameter`` of a subclass instance is no longer a ``Parameter`` type, and a pickled
subclass instance carries its class into ``torch.save`` files, which
``torch.load(weights_only=True)`` then refuses (UnpicklingError). With the table, autograd,
optimizers, ``state_dict`` and checkpoints see plain tensors, and a checkpoint saved under
fake-cuda loads anywhere; ``.grad`` is entered when it is read. The subclass would have been
cheaper per operation (1.36x on a small MLP step with only its inputs wrapped, against 1.86x
for this mode), which does not pay for those breakages.

``patched_cuda_runtime`` makes ``torch.cuda``, ``torch.accelerator`` and
``torch.backends.cudnn`` report ``device_count`` working GPUs, so scripts take their GPU
branch. ``torch.amp.autocast("cuda")`` then runs as a no-op (CUDA autocast affects only
CUDA kernels, and every kernel here is a CPU one): values stay float32. ``GradScaler`` works
on its CPU kernels. Random numbers for CUDA tensors come from the CPU generator, so they
differ from a real GPU's.
"""

from __future__ import annotations

import contextlib
import functools
import time
import weakref
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch
import torch.utils._device as _default_device
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors

Tensor = torch.Tensor

#: What ``get_device_properties`` and ``mem_get_info`` report: an 80 GiB, compute 8.0 device.
TOTAL_MEMORY = 80 * 1024**3
DEVICE_NAME = "NVIDIA fake-cuda (simulated by torchlint)"

# Operations CUDA accepts with tensors on different devices.
_CROSS_DEVICE_OK = {
    Tensor.to, Tensor.copy_, Tensor.__getitem__, Tensor.__setitem__, Tensor.index_put_, Tensor.type_as,
    Tensor.cpu, Tensor.cuda, Tensor.new_tensor, Tensor.new_zeros, Tensor.new_ones, Tensor.new_empty,
    Tensor.new_full, Tensor.set_, Tensor.__repr__, Tensor.__format__,
    # metadata and autograd plumbing, not kernels
    torch._has_compatible_shallow_copy_type, Tensor.grad.__set__, Tensor.is_set_to, torch.is_same_size,
    Tensor.backward, torch.autograd.backward, torch.autograd.grad, Tensor.__deepcopy__, Tensor.__reduce_ex__,
}


#: Factories that take `device=` (torch.zeros, torch.randn...).
_CONSTRUCTORS = frozenset(_device_constructors())


def _not_cuda_numpy(index: int) -> TypeError:
    return TypeError(f"can't convert cuda:{index} device type tensor to numpy. "
                     "Use Tensor.cpu() to copy the tensor to host memory first.")


@dataclass
class SyncLog:
    """Host-device synchronisations the program caused (``.item()``, printing, ``.cpu()``...).

    ``listeners`` are called with the operation's name at each sync, from inside the torch call,
    so a probe can ask for the user's line (``ctx.site()``) and count syncs per line."""

    total: int = 0
    by_op: Counter = field(default_factory=Counter)
    listeners: list[Callable[[str], None]] = field(default_factory=list)

    def note(self, op: str) -> None:
        self.total += 1
        self.by_op[op] += 1
        for listener in self.listeners:
            listener(op)

    def as_dict(self) -> dict[str, Any]:
        return {"total": self.total, "by_op": dict(self.by_op)}


class _Placed(weakref.ref):
    """A weak reference to a simulated-CUDA tensor that knows its table key and device index."""

    __slots__ = ("key", "index")


class SimulatedCuda:
    """Which live tensors are on which simulated device, and the state torch.cuda reports."""

    def __init__(self, device_count: int = 1) -> None:
        self.device_count = device_count
        self.current = 0
        self.table: dict[int, _Placed] = {}
        self.syncs = SyncLog()
        self.peak: dict[int, int] = {}
        #: While torch.save runs: storage data_ptr -> simulated index (its location tag).
        self.saving: dict[int, int] = {}
        #: While torch.load runs: data_ptr of each storage restored to simulated CUDA -> index.
        self.restored: dict[int, int] = {}

    # -- the table --------------------------------------------------------------------------
    def index_of(self, tensor: Tensor) -> int | None:
        ref = self.table.get(id(tensor))
        if ref is not None and ref() is tensor:
            return ref.index
        return None

    def place(self, tensor: Tensor, index: int) -> None:
        key = id(tensor)
        ref = self.table.get(key)
        if ref is not None and ref() is tensor:
            ref.index = index
            return
        ref = _Placed(tensor, self._forget)
        ref.key = key
        ref.index = index
        self.table[key] = ref

    def _forget(self, ref: _Placed) -> None:
        # the id may already belong to a newer tensor: remove only this tensor's entry
        if self.table.get(ref.key) is ref:
            del self.table[ref.key]

    def unplace(self, tensor: Tensor) -> None:
        if self.index_of(tensor) is not None:
            del self.table[id(tensor)]

    # -- devices ----------------------------------------------------------------------------
    def parse(self, device: Any) -> int | None:
        """The simulated index ``device`` names, -1 for a real (CPU) device, None for no device."""
        if device is None or isinstance(device, bool):
            return None
        if isinstance(device, int):
            return self._checked(device)
        if isinstance(device, str):
            if not device.startswith("cuda"):
                return -1
            device = torch.device(device)
        if isinstance(device, torch.device):
            if device.type != "cuda":
                return -1
            return self._checked(self.current if device.index is None else device.index)
        return None

    def storage_places(self) -> dict[int, int]:
        """data_ptr of the storage of every live simulated tensor -> its index."""
        places: dict[int, int] = {}
        with torch._C.DisableTorchFunction():
            for ref in list(self.table.values()):
                tensor = ref()
                if tensor is not None:
                    places[tensor.untyped_storage().data_ptr()] = ref.index
        return places

    def _checked(self, index: int) -> int:
        if not 0 <= index < self.device_count:
            raise RuntimeError("CUDA error: invalid device ordinal")
        return index

    # -- memory, as torch.cuda.memory_allocated reports it -----------------------------------
    def allocated(self, device: Any = None) -> int:
        index = self.current if device is None else self.parse(device)
        seen: dict[int, int] = {}
        with torch._C.DisableTorchFunction():
            for ref in list(self.table.values()):
                tensor = ref()
                if tensor is None or ref.index != index:
                    continue
                storage = tensor.untyped_storage()
                seen[storage.data_ptr()] = storage.nbytes()
        total = sum(seen.values())
        self.peak[index] = max(self.peak.get(index, 0), total)
        return total

    def max_allocated(self, device: Any = None) -> int:
        index = self.current if device is None else self.parse(device)
        self.allocated(index)
        return self.peak.get(index, 0)


class FakeCudaFunctionMode(TorchFunctionMode):
    """Propagates simulated placement through every torch call; see the module docstring."""

    def __init__(self, sim: SimulatedCuda) -> None:
        super().__init__()
        self.sim = sim
        self.special: dict[Any, Callable] = _special_handlers()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        handler = self.special.get(func)
        if handler is not None:
            return handler(self, func, args, kwargs)
        return self.general(func, args, kwargs)

    def general(self, func: Any, args: tuple, kwargs: dict) -> Any:
        sim = self.sim
        target = None
        device = kwargs.get("device")
        if device is None and func in _CONSTRUCTORS:
            # torch.set_default_device("cuda") / `with torch.device("cuda"):` put a DeviceContext
            # at the bottom of the mode stack, below this mode: name its device here instead.
            device = _default_device.CURRENT_DEVICE
        if device is not None:
            target = sim.parse(device)
            if target is not None and target >= 0:
                kwargs = {**kwargs, "device": "cpu"}
        placed: set[int] = set()
        cpu_tensor = False
        table = sim.table
        if table:
            for value in (*args, *kwargs.values()) if kwargs else args:
                if isinstance(value, Tensor):
                    ref = table.get(id(value))
                    if ref is not None and ref() is value:
                        placed.add(ref.index)
                    elif value.ndim != 0:
                        cpu_tensor = True
                elif isinstance(value, (list, tuple)):
                    for item in value:
                        if isinstance(item, Tensor):
                            ref = table.get(id(item))
                            if ref is not None and ref() is item:
                                placed.add(ref.index)
                            elif item.ndim != 0:
                                cpu_tensor = True
            if placed and (cpu_tensor or len(placed) > 1) and func not in _CROSS_DEVICE_OK \
                    and not getattr(func, "__name__", "").startswith("_foreach"):
                raise RuntimeError(self._rnn_mismatch(func, args) or _mismatch(placed, cpu_tensor))
        result = func(*args, **kwargs)
        if target is None:
            if not placed:
                return result
            target = min(placed)
        if target < 0:
            return result
        if args and result is args[0] and isinstance(result, Tensor) and sim.index_of(result) is None:
            return result  # an in-place op keeps its tensor where it was (a CPU scalar here)
        self._place(result, target)
        return result

    def _rnn_mismatch(self, func: Any, args: tuple) -> str | None:
        """cuDNN's own words for an RNN whose hidden state or weights sit on another device."""
        if getattr(func, "__name__", "") not in _RNN_OPS or len(args) < 3 or not isinstance(args[0], Tensor):
            return None
        name = self._device_name
        found = name(args[0])
        hidden = [args[1]] if isinstance(args[1], Tensor) else list(args[1]) if isinstance(args[1], (list, tuple)) else []
        for what, tensors in (("hidden", hidden), ("parameter", list(args[2]) if isinstance(args[2], (list, tuple)) else [])):
            for tensor in tensors:
                if isinstance(tensor, Tensor) and name(tensor) != found:
                    return (f"Input and {what} tensors are not at the same device, found input tensor at {found} "
                            f"and {what} tensor at {name(tensor)}")
        return None

    def _device_name(self, tensor: Tensor) -> str:
        index = self.sim.index_of(tensor)
        return "cpu" if index is None else f"cuda:{index}"

    def _place(self, result: Any, index: int) -> None:
        if isinstance(result, Tensor):
            self.sim.place(result, index)
        elif isinstance(result, (tuple, list)):
            for item in result:
                if isinstance(item, Tensor):
                    self.sim.place(item, index)


_RNN_OPS = {"lstm", "gru", "rnn_tanh", "rnn_relu"}


def _mismatch(placed: set[int], cpu_tensor: bool) -> str:
    names = [f"cuda:{index}" for index in sorted(placed)]
    if cpu_tensor:
        names.append("cpu")
    return f"Expected all tensors to be on the same device, but found at least two devices, {names[0]} and {names[1]}!"


# -- special operations ---------------------------------------------------------------------

def _device_get(mode: FakeCudaFunctionMode, func: Any, args: tuple, kwargs: dict) -> Any:
    index = mode.sim.index_of(args[0])
    return func(*args, **kwargs) if index is None else torch.device("cuda", index)


def _is_cuda_get(mode: FakeCudaFunctionMode, func: Any, args: tuple, kwargs: dict) -> Any:
    return mode.sim.index_of(args[0]) is not None or func(*args, **kwargs)


def _is_cpu_get(mode: FakeCudaFunctionMode, func: Any, args: tuple, kwargs: dict) -> Any:
    return mode.sim.index_of(args[0]) is None and func(*args, **kwargs)


def _get_device(mode: FakeCudaFunctionMode, func: Any, args: tuple, kwargs: dict) -> Any:
    index = mode.sim.index_of(args[0])
    return func(*args, **kwargs) if index is None else index


def _type(mode: FakeCudaFunctionMode, func: Any, args: tuple, kwargs: dict) -> Any:
    index = mode.sim.index_of(args[0])
    result = mode.general(func, args, kwargs)
    if index is not None and isinstance(result, str) and result.startswith("torch."):
        return "torch.cuda." + result[len("torch."):]
    return result


def _data_set(mode: FakeCudaFunctionMode, func: Any, args: tuple, kwargs: dict) -> Any:
    # `param.data = moved` is how Module._apply moves parameters: the Parameter follows.
    result = func(*args, **kwargs)
    target, value = args[0], args[1]
    index = mode.sim.index_of(value) if isinstance(value, Tensor) else None
    if index is None:
        mode.sim.unplace(target)
    else:
        mode.sim.place(target, index)
    return result


def _to(mode: FakeCudaFunctionMode, func: Any, args: tuple, kwargs: dict) -> Any:
    sim = mode.sim
    source = args[0]
    here = sim.index_of(source)
    rest = list(args[1:])
    target = None
    if rest and isinstance(rest[0], Tensor):  # .to(other): other's device and dtype
        other = rest[0]
        target = sim.index_of(other)
        target = -1 if target is None else target
        rest[0] = other.dtype
    elif rest and not isinstance(rest[0], torch.dtype):
        target = sim.parse(rest[0])
        if target is not None:
            rest[0] = "cpu"
    if "device" in kwargs:
        target = sim.parse(kwargs["device"])
        kwargs = {**kwargs, "device": "cpu"}
    if target is None:  # only a dtype (or nothing): the tensor stays where it is
        result = func(source, *rest, **kwargs)
        if here is not None:
            sim.place(result, here)
        return result
    now = -1 if here is None else here
    if target != now:
        kwargs = {**kwargs, "copy": True}
    result = func(source, *rest, **kwargs)
    if target >= 0:
        sim.place(result, target)
    elif here is not None:
        if result is not source:
            sim.unplace(result)
        if not kwargs.get("non_blocking"):
            sim.syncs.note("to")
    return result


def _cuda(mode: FakeCudaFunctionMode, func: Any, args: tuple, kwargs: dict) -> Any:
    sim = mode.sim
    source = args[0]
    device = args[1] if len(args) > 1 else kwargs.get("device")
    target = sim.current if device is None else sim.parse(device)
    if target is None or target < 0:
        raise RuntimeError(f"Invalid device, must be cuda device (got {device!r})")
    if sim.index_of(source) == target:
        return source
    options = {k: v for k, v in kwargs.items() if k in ("non_blocking", "memory_format")}
    result = Tensor.to(source, "cpu", copy=True, **options)
    sim.place(result, target)
    return result


def _cpu(mode: FakeCudaFunctionMode, func: Any, args: tuple, kwargs: dict) -> Any:
    source = args[0]
    if mode.sim.index_of(source) is None:
        return func(*args, **kwargs)
    mode.sim.syncs.note("cpu")
    return Tensor.to(source, "cpu", copy=True, memory_format=kwargs.get("memory_format", torch.preserve_format))


def _numpy(mode: FakeCudaFunctionMode, func: Any, args: tuple, kwargs: dict) -> Any:
    index = mode.sim.index_of(args[0])
    if index is not None:
        if kwargs.get("force"):
            mode.sim.syncs.note("numpy")
            return func(*args, **kwargs)
        raise _not_cuda_numpy(index)
    return func(*args, **kwargs)


def _sync(name: str) -> Callable:
    def handler(mode: FakeCudaFunctionMode, func: Any, args: tuple, kwargs: dict) -> Any:
        if args and isinstance(args[0], Tensor) and mode.sim.index_of(args[0]) is not None:
            mode.sim.syncs.note(name)
        return func(*args, **kwargs)

    return handler


def _repr(mode: FakeCudaFunctionMode, func: Any, args: tuple, kwargs: dict) -> Any:
    index = mode.sim.index_of(args[0])
    text = func(*args, **kwargs)
    if index is None or not isinstance(text, str) or not text.startswith("tensor(") or "device=" in text:
        return text
    mode.sim.syncs.note("repr")
    # torch's repr names the device right after the values: tensor([...], device='cuda:0', ...)
    end = text.rfind("]") + 1 if "[" in text else len("tensor(") + len(text[len("tensor("):].split(",")[0].split(")")[0])
    return f"{text[:end]}, device='cuda:{index}'{text[end:]}"


def _requires_grad_set(mode: FakeCudaFunctionMode, func: Any, args: tuple, kwargs: dict) -> Any:
    # torch.load rebuilds each tensor as `t = torch.empty(0).set_(storage, ...)` (a `set_` no
    # torch function mode sees) and then sets `t.requires_grad`: the first moment to place it.
    result = func(*args, **kwargs)
    restored = mode.sim.restored
    if restored:
        with torch._C.DisableTorchFunction():
            index = restored.get(args[0].untyped_storage().data_ptr())
        if index is not None:
            mode.sim.place(args[0], index)
    return result


def _identity(mode: FakeCudaFunctionMode, func: Any, args: tuple, kwargs: dict) -> Any:
    return args[0]


def _false(mode: FakeCudaFunctionMode, func: Any, args: tuple, kwargs: dict) -> Any:
    return False


def _none(mode: FakeCudaFunctionMode, func: Any, args: tuple, kwargs: dict) -> Any:
    return None


def _special_handlers() -> dict[Any, Callable]:
    handlers: dict[Any, Callable] = {
        Tensor.device.__get__: _device_get,
        Tensor.is_cuda.__get__: _is_cuda_get,
        Tensor.is_cpu.__get__: _is_cpu_get,
        Tensor.data.__set__: _data_set,
        Tensor.get_device: _get_device,
        Tensor.type: _type,
        Tensor.to: _to,
        Tensor.cuda: _cuda,
        Tensor.cpu: _cpu,
        Tensor.numpy: _numpy,
        Tensor.__array__: _numpy,
        Tensor.__repr__: _repr,
        Tensor.pin_memory: _identity,
        Tensor.is_pinned: _false,
        Tensor.record_stream: _none,
        Tensor.requires_grad.__set__: _requires_grad_set,
    }
    for name in ("item", "tolist", "__float__", "__int__", "__bool__", "__index__", "__complex__", "__format__"):
        handlers[getattr(Tensor, name)] = _sync(name.strip("_"))
    return handlers


# -- torch.cuda, torch.accelerator and friends -----------------------------------------------

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

    cuda = torch.cuda
    accelerator = torch.accelerator
    replacements: list[tuple[Any, str, Any]] = [
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
    for name in ("empty_cache", "manual_seed", "manual_seed_all", "seed", "seed_all", "ipc_collect", "init",
                 "set_rng_state", "set_rng_state_all"):
        replacements.append((cuda, name, noop(name)))
    replacements.append((accelerator, "empty_cache", noop("empty_cache")))
    return [(owner, name, value) for owner, name, value in replacements if hasattr(owner, name)]


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


@contextlib.contextmanager
def parameters_keep_placement(sim: SimulatedCuda) -> Iterator[None]:
    """``nn.Parameter(t)`` makes a new tensor object outside any torch call: give it ``t``'s place."""
    parameter = torch.nn.Parameter
    original = parameter.__dict__["__new__"]
    make = original.__func__

    def __new__(cls: type, data: Any = None, requires_grad: bool = True) -> Any:
        made = make(cls, data, requires_grad)
        if isinstance(data, Tensor):
            index = sim.index_of(data)
            if index is not None:
                sim.place(made, index)
        return made

    parameter.__new__ = staticmethod(__new__)
    try:
        yield
    finally:
        parameter.__new__ = original


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


@contextlib.contextmanager
def simulating(sim: SimulatedCuda) -> Iterator[FakeCudaFunctionMode]:
    """Everything fake-cuda needs, for the duration of the target's run."""
    with patched_cuda_runtime(sim), parameters_keep_placement(sim), checkpoints_keep_placement(sim), \
            data_parallel_on_one_device(), FakeCudaFunctionMode(sim) as mode:
        yield mode
