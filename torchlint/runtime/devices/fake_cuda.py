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

``fake_cuda_runtime.py`` makes ``torch.cuda``, ``torch.accelerator`` and
``torch.backends.cudnn`` report ``device_count`` working GPUs, so scripts take their GPU
branch; ``fake_cuda_checkpoints.py`` saves and loads checkpoints as a GPU run would.
``torch.amp.autocast("cuda")`` then runs as a no-op (CUDA autocast affects only CUDA
kernels, and every kernel here is a CPU one): values stay float32. ``GradScaler`` works on
its CPU kernels. Random numbers for CUDA tensors come from the CPU generator, so they
differ from a real GPU's.
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch
import torch.utils._device as _default_device
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors

from torchlint.runtime.storages import storages

Tensor = torch.Tensor

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
    #: Above 0 while a probe runs: a probe reading a value is no sync of the program.
    paused: int = 0

    def note(self, op: str) -> None:
        if self.paused:
            return
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
                    for pointer, _ in storages(tensor):
                        places[pointer] = ref.index
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
                for pointer, nbytes in storages(tensor):  # a sparse tensor's indices and values
                    seen[pointer] = nbytes
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
                    elif value.ndim != 0 and not (value.is_floating_point() is False and _takes_cpu_sizes(func)):
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
        if isinstance(result, tuple) and getattr(func, "__name__", "") in _SIZES_STAY_ON_CPU:
            self._place(result[0], target)  # (data, batch_sizes) / (padded, lengths)
        else:
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
#: Operations whose integer size arguments live on the CPU even on CUDA (packed sequences'
#: lengths and batch sizes, CTC's lengths).
_CPU_SIZES_OK = {"_pack_padded_sequence", "_pad_packed_sequence", "ctc_loss", *_RNN_OPS}


#: Operations whose second output is a size tensor that stays on the CPU.
_SIZES_STAY_ON_CPU = {"_pack_padded_sequence", "_pad_packed_sequence"}


def _takes_cpu_sizes(func: Any) -> bool:
    return getattr(func, "__name__", "") in _CPU_SIZES_OK


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
    legacy = _legacy_type_name(args[1] if len(args) > 1 else kwargs.get("dtype"))
    if legacy is not None and (legacy.startswith("torch.cuda.") or index is not None):
        # `.type(torch.cuda.FloatTensor)` (or its name) is a move and a cast: CUDA's kernels
        # would do it; the simulation places a copy. A CUDA tensor's `.type(torch.FloatTensor)`
        # comes back to the CPU.
        dtype = getattr(torch, legacy.rsplit(".", 1)[1]).dtype
        device = "cuda" if legacy.startswith("torch.cuda.") else "cpu"
        source = args[0]
        if source.dtype == dtype and (index is not None) == (device == "cuda"):
            return source
        return _to(mode, Tensor.to, (source, device, dtype), {"non_blocking": bool(kwargs.get("non_blocking", False))})
    result = mode.general(func, args, kwargs)
    if index is not None and isinstance(result, str) and result.startswith("torch."):
        return "torch.cuda." + result[len("torch."):]
    return result


def _legacy_type_name(kind: Any) -> str | None:
    """'torch.cuda.FloatTensor' for that type (the simulation's stand-in or torch's) or name."""
    if isinstance(kind, type) and isinstance(getattr(kind, "dtype", None), torch.dtype):
        kind = f"{kind.__module__}.{kind.__name__}"
    if isinstance(kind, str) and kind.startswith("torch.") and kind.endswith("Tensor") and ".sparse." not in kind:
        return kind
    return None


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


@contextlib.contextmanager
def parameters_keep_placement(sim: SimulatedCuda) -> Iterator[None]:
    """``nn.Parameter(t)`` and the legacy ``Variable(t)`` make a new tensor object outside any
    torch call: give it ``t``'s place."""
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

    variable = torch.autograd.Variable
    make_variable = torch._C._LegacyVariableBase.__new__

    def new_variable(cls: type, data: Any = None, *args: Any, **kwargs: Any) -> Any:
        made = make_variable(cls, data, *args, **kwargs)
        index = sim.index_of(data) if isinstance(data, Tensor) else None
        if index is not None:
            sim.place(made, index)
        return made

    parameter.__new__ = staticmethod(__new__)
    variable.__new__ = staticmethod(new_variable)
    try:
        yield
    finally:
        parameter.__new__ = original
        del variable.__new__


@contextlib.contextmanager
def compile_skips_the_simulation() -> Iterator[None]:
    """Dynamo would trace this mode's bookkeeping (a dict of weak references) into every
    compiled frame, break the graph there, and recompile its helpers until its limit: mark
    the simulation's files as library code it runs without tracing. Done on the first
    ``torch.compile``, so a run that never compiles never imports Dynamo."""
    original = torch.compile

    @functools.wraps(original)
    def compile(*args: Any, **kwargs: Any) -> Any:
        from torch._dynamo import trace_rules

        for module in ("torchlint.runtime.devices.fake_cuda", "torchlint.runtime.devices.fake_cuda_runtime",
                       "torchlint.runtime.devices.fake_cuda_checkpoints"):
            trace_rules.add(module)
        return original(*args, **kwargs)

    torch.compile = compile
    try:
        yield
    finally:
        torch.compile = original


@contextlib.contextmanager
def simulating(sim: SimulatedCuda) -> Iterator[FakeCudaFunctionMode]:
    """Everything fake-cuda needs, for the duration of the target's run."""
    from torchlint.runtime.devices.fake_cuda_checkpoints import checkpoints_keep_placement
    from torchlint.runtime.devices.fake_cuda_runtime import data_parallel_on_one_device, patched_cuda_runtime

    with patched_cuda_runtime(sim), parameters_keep_placement(sim), checkpoints_keep_placement(sim), \
            data_parallel_on_one_device(), compile_skips_the_simulation(), FakeCudaFunctionMode(sim) as mode:
        yield mode
