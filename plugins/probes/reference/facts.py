"""Recording the facts of a training run, one record per sampled optimizer step (imports torch).

A record holds what happened since the previous optimizer step, up to and including this one:

* ``events``: the calls that make a training step, in order, each with its user line:
  ``zero_grad:0`` (optimizer 0's, or ``zero_grad:Net`` a model's), ``backward``,
  ``clip_grad_norm_``, ``clip_grad_value_``, ``scheduler:StepLR``, ``autocast:cpu/bfloat16``,
  ``train:Net``/``eval:Net`` (a model switched by the program), ``step:0``;
* ``params``: per parameter (named by its path in the model, ``Net.fc.weight``), the optimizer
  and param group that hold it, ``requires_grad``, its gradient (none, all zero, non-zero,
  not finite), whether the step changed it, its dtype;
* ``lr``: the learning rate of each param group of the optimizer that stepped;
* ``loss``: the value of the first tensor ``backward()`` was called on;
* ``forward``: per model (a module called at the top level that has parameters), at its first
  forward with grad enabled: the train/eval mode of each of its modules, whether each module's
  output is finite and whether it is all zero (read in one sync when the model returns), the
  model's output dtype, the line, and the last ``train()``/``eval()`` call on it before that.

Only sampled steps are recorded (``sampled``): the first few, then every k-th, so a long run
costs about what a short one does. Between sampled steps every hook returns at its first test.
Nothing here is hooked per torch operation: global optimizer and module hooks, and a few
patched functions (``torch.autograd.backward``, ``zero_grad``, ``train``, clipping, scheduler
steps, autocast's ``__enter__``) that run once or twice per step.
"""

from __future__ import annotations

import math
import sys
import threading
import weakref
from typing import Any, Callable

import torch
from torch import nn
from torch.nn.modules import module as module_hooks
from torch.optim import lr_scheduler
from torch.optim import optimizer as optimizer_hooks

from torchlint.probe import Patches

#: Steps recorded one by one from the start, then every EVERY-th: a relation must hold at each
#: recorded step, so the first steps (where most bugs show) are all there.
FIRST = 8
EVERY = 10
#: Elements of each parameter compared across a step, taken at an even stride over the whole
#: tensor (not a prefix: an embedding's first rows may simply not be in the batch).
SAMPLE = 1024


def sampled(step: int) -> bool:
    return step <= FIRST or step % EVERY == 0


def _dtype(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


class Recorder:
    def __init__(self, frames: Any, computes_values: bool, guard: Callable[[Any], Any],
                 on_record: Callable[[dict[str, Any]], None]) -> None:
        self.frames = frames
        self.computes_values = computes_values
        self.guard = guard
        self.on_record = on_record
        self.step = 0  # optimizer steps ended, all optimizers together (as --steps counts)
        self.optimizers: dict[int, tuple[weakref.ref, int]] = {}  # id -> (optimizer, creation index)
        self.optimizer_types: dict[str, str] = {}  # "0" -> "SGD"
        self.roots: dict[int, tuple[weakref.ref, str]] = {}  # id(model) -> (model, label)
        self.labels: dict[str, int] = {}
        self.parameters: list[str] = []  # every name seen, in first-seen order (the rows of "params")
        self.shapes: dict[str, list[int]] = {}  # name -> shape: a same-named layer of another size is another layer
        self.modules: dict[str, list[str]] = {}  # model label -> its module paths
        self.last_switch: dict[str, list] = {}  # model label -> [kind, path, line] of the last train()/eval()
        self._known_names: set[str] = set()
        self.thread: int | None = None
        #: During a recorded forward: module -> its index, and each module's largest |output|.
        self._outputs: tuple[dict[int, int], dict[int, torch.Tensor]] | None = None
        self._seen_top: set[int] = set()
        self._depth = 0
        self._inside = 0  # in a patched call: nested ones (eval() calls train(False)) are not events
        self._record = self._new_record()
        self._before: Any = None
        self._patches = Patches()
        self._handles: list[Any] = []

    # -- install -----------------------------------------------------------------------------
    def install(self) -> None:
        # The thread that runs the program: a background thread's forward calls or steps
        # (an EMA model, a prefetcher) are not the training loop's.
        self.thread = threading.get_ident()
        guard = self.guard
        self._handles = [
            optimizer_hooks.register_optimizer_step_pre_hook(guard(self._before_step)),
            optimizer_hooks.register_optimizer_step_post_hook(guard(self._after_step)),
            module_hooks.register_module_forward_pre_hook(guard(self._enter_forward)),
            module_hooks.register_module_forward_hook(guard(self._leave_forward), always_call=True),
        ]
        recorder = self

        def optimizer_init(original):
            def __init__(optimizer, *args, **kwargs):
                original(optimizer, *args, **kwargs)
                guard(recorder._note_optimizer)(optimizer)
            return __init__

        def event_of(original, kind_of, always=False):
            """`original` with an event recorded before it, unless nested in another one, made
            by another thread, or in a step that is not recorded (``always``: ``kind_of`` is
            still asked, for what it tracks between recorded steps)."""
            def patched(*args, **kwargs):
                if recorder._inside or threading.get_ident() != recorder.thread:
                    return original(*args, **kwargs)
                recording = sampled(recorder.step + 1)
                if not (recording or always):
                    return original(*args, **kwargs)
                kind = guard(kind_of)(*args, **kwargs)
                if kind and recording:
                    guard(recorder._event)(kind, sys._getframe(1))
                recorder._inside += 1
                try:
                    return original(*args, **kwargs)
                finally:
                    recorder._inside -= 1
            patched.__wrapped__ = original
            return patched

        self._patch(torch.optim.Optimizer, "__init__", optimizer_init)
        self._patch(torch.optim.Optimizer, "zero_grad", lambda f: event_of(f, self._optimizer_zero_grad))
        self._patch(nn.Module, "zero_grad", lambda f: event_of(f, self._module_event("zero_grad")))
        self._patch(nn.Module, "train", lambda f: event_of(f, self._mode_switch, always=True))
        self._patch(torch.autograd, "backward", lambda f: event_of(f, self._backward))
        for module in (torch.nn.utils, torch.nn.utils.clip_grad):
            self._patch(module, "clip_grad_norm_", lambda f: event_of(f, lambda *a, **k: "clip_grad_norm_"))
            self._patch(module, "clip_grad_value_", lambda f: event_of(f, lambda *a, **k: "clip_grad_value_"))
        for cls in (lr_scheduler.LRScheduler, lr_scheduler.ReduceLROnPlateau):
            self._patch(cls, "step", lambda f: event_of(f, self._scheduler_step))
        self._patch(torch.amp.autocast_mode.autocast, "__enter__", lambda f: event_of(f, self._autocast))

    def _patch(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        self._patches.replace(owner, name, make)

    def uninstall(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self._patches.restore()

    # -- events ------------------------------------------------------------------------------
    def _new_record(self) -> dict[str, Any]:
        return {"events": [], "forward": {}, "loss": None}

    def _event(self, kind: str, frame: Any) -> None:
        site = self.frames.user_site(frame)
        self._record["events"].append([kind, site.path if site else None, site.line if site else None])

    def _note_optimizer(self, optimizer: Any) -> None:
        index = len(self.optimizer_types)
        self.optimizers[id(optimizer)] = (weakref.ref(optimizer), index)
        self.optimizer_types[str(index)] = type(optimizer).__name__

    def _optimizer_index(self, optimizer: Any) -> str:
        known = self.optimizers.get(id(optimizer))
        if known is None or known[0]() is not optimizer:
            self._note_optimizer(optimizer)  # built before the probe (an entry's model) or re-used id
            known = self.optimizers[id(optimizer)]
        return str(known[1])

    def _optimizer_zero_grad(self, optimizer: Any, *args: Any, **kwargs: Any) -> str:
        return f"zero_grad:{self._optimizer_index(optimizer)}"

    def _module_event(self, what: str) -> Callable[..., str | None]:
        def kind(module: Any, *args: Any, **kwargs: Any) -> str | None:
            root = self.roots.get(id(module))
            return f"{what}:{root[1]}" if root else None
        return kind

    def _mode_switch(self, module: Any, mode: bool = True, *args: Any, **kwargs: Any) -> str | None:
        root = self.roots.get(id(module))
        if root is None:
            return None
        kind = f"{'train' if mode else 'eval'}:{root[1]}"
        site = self.frames.user_site(sys._getframe(1))
        self.last_switch[root[1]] = [kind, site.path if site else None, site.line if site else None]
        return kind

    def _backward(self, tensors: Any = None, *args: Any, **kwargs: Any) -> str:
        if self._record["loss"] is None:
            loss = tensors[0] if isinstance(tensors, (list, tuple)) and tensors else tensors
            if isinstance(loss, torch.Tensor) and loss.numel() == 1 and self.computes_values and not loss.is_meta:
                with torch._C.DisableTorchFunction(), torch.no_grad():
                    value = float(loss.detach().float())
                self._record["loss"] = value if math.isfinite(value) else str(value)
        return "backward"

    def _scheduler_step(self, scheduler: Any, *args: Any, **kwargs: Any) -> str | None:
        if getattr(scheduler, "_step_count", 1) == 0:
            return None  # the step a scheduler's constructor takes itself
        return f"scheduler:{type(scheduler).__name__}"

    def _autocast(self, context: Any) -> str:
        return f"autocast:{getattr(context, 'device', '?')}/{_dtype(getattr(context, 'fast_dtype', '?'))}"

    # -- models ------------------------------------------------------------------------------
    def _enter_forward(self, module: Any, args: Any) -> None:
        if threading.get_ident() != self.thread:
            return
        self._depth += 1
        if self._depth != 1:
            return
        if id(module) not in self._seen_top:
            self._seen_top.add(id(module))
            if next(module.parameters(), None) is not None:
                self._add_root(module)
        root = self.roots.get(id(module))
        if root is None or not sampled(self.step + 1) or not torch.is_grad_enabled():
            return
        label = root[1]
        if label in self._record["forward"]:
            return
        site = self.frames.user_site(sys._getframe(1))
        inner = root[0]()
        if inner is None:
            return
        modules = [m for _, m in inner.named_modules()]
        modes = "".join("t" if m.training else "e" for m in modules)
        self._record["forward"][label] = {
            "modes": modes, "at": [site.path if site else None, site.line if site else None],
            "switch": self.last_switch.get(label),
        }
        if self.computes_values:
            # Each module's output in this forward: read together when the model returns
            self._outputs = ({id(m): i for i, m in enumerate(modules)}, {})

    def _leave_forward(self, module: Any, args: Any, output: Any) -> None:
        if threading.get_ident() != self.thread:
            return
        self._depth = max(0, self._depth - 1)
        if self._outputs is not None:
            self._note_output(module, output)
        if self._depth != 0:
            return
        root = self.roots.get(id(module))
        if root is None:
            return
        entry = self._record["forward"].get(root[1])
        if entry is not None and "dtype" not in entry:
            tensor = _first_tensor(output)
            entry["dtype"] = _dtype(tensor.dtype) if tensor is not None else None
            if self._outputs is not None:
                entry["outputs"] = _output_codes(len(entry["modes"]), self._outputs[1])
        self._outputs = None

    def _note_output(self, module: Any, output: Any) -> None:
        """Whether a module's output is finite, and whether it is all zero (one small tensor
        per module; no sync until the model returns)."""
        index = self._outputs[0].get(id(module))
        tensor = _first_tensor(output)
        if index is None or index in self._outputs[1] or tensor is None or not tensor.is_floating_point() or tensor.is_meta:
            return
        with torch._C.DisableTorchFunction(), torch.no_grad():
            # The largest |value|: NaN if any is NaN, inf if any is infinite, 0 if all are zero.
            # One small reduction (an isfinite/any pair costs ~20x as much on a CPU).
            self._outputs[1][index] = tensor.detach().abs().amax()

    def _add_root(self, module: Any) -> None:
        inner = _unwrapped(module)
        label = type(inner).__name__
        count = self.labels.get(label, 0) + 1
        self.labels[label] = count
        if count > 1:
            label = f"{label}#{count}"
        self.roots[id(module)] = (weakref.ref(inner), label)
        self.modules[label] = [f"{label}.{path}" if path else label for path, _ in inner.named_modules()]

    def _names(self) -> dict[int, str]:
        names: dict[int, str] = {}
        for ref, label in self.roots.values():
            module = ref()
            if module is not None:
                for name, param in module.named_parameters():
                    names.setdefault(id(param), f"{label}.{name}")
        return names

    def _held(self, names: dict[int, str]) -> tuple[dict[int, str], dict[int, torch.Tensor]]:
        """Which optimizer and param group holds each parameter (``"0/1"``: optimizer 0, group
        1; the first one, in the order they were built), and every parameter of the models and
        the optimizers. A parameter no model names is named by its place (``optimizer0.group0[3]``)."""
        holders: dict[int, str] = {}
        params = {id(p): p for ref, _ in self.roots.values() if ref() is not None for p in ref().parameters()}
        for ref, number in sorted(self.optimizers.values(), key=lambda item: item[1]):
            optimizer = ref()
            if optimizer is None:
                continue
            for g, group in enumerate(optimizer.param_groups):
                for i, param in enumerate(group["params"]):
                    if isinstance(param, torch.Tensor) and id(param) not in holders:
                        holders[id(param)] = f"{number}/{g}"
                        names.setdefault(id(param), f"optimizer{number}.group{g}[{i}]")
                        params.setdefault(id(param), param)
        return holders, params

    # -- steps -------------------------------------------------------------------------------
    def _before_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if threading.get_ident() != self.thread:
            return
        self._before = None
        if not sampled(self.step + 1):
            return
        index = self._optimizer_index(optimizer)
        self._event(f"step:{index}", sys._getframe(1))
        names = self._names()
        holders, params = self._held(names)
        rows: dict[str, list] = {}
        stepping = [p for p in params.values() if holders.get(id(p), "").split("/")[0] == index]
        grads = _grad_states(list(params.values()), self.computes_values)
        for key, param in params.items():
            name = names.get(key)
            if name is None:
                continue
            rows[name] = [holders.get(key), bool(param.requires_grad), grads[key], None, _dtype(param.dtype)]
            if name not in self.shapes:
                self.shapes[name] = list(param.shape)
        self._record.update(step=self.step + 1, optimizer=index, rows=rows,
                            lr=[_number(group.get("lr")) for group in optimizer.param_groups])
        if self.computes_values:
            moving = [p for p in stepping if p.grad is not None]
            self._before = ([names.get(id(p)) for p in moving], moving, _samples(moving))
        site = self._record["events"][-1]
        self._record["site"] = site[1:]

    def _after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if threading.get_ident() != self.thread:
            return
        self.step += 1
        if not sampled(self.step) or "rows" not in self._record:
            self._record = self._new_record()  # nothing was recorded for this step
            return
        if self._before is not None:
            names, moving, before = self._before
            for name, changed in zip(names, _changed(before, _samples(moving))):
                if name in self._record["rows"]:
                    self._record["rows"][name][3] = changed
            self._before = None
        record, self._record = self._record, self._new_record()
        for name in record["rows"]:
            if name not in self._known_names:
                self._known_names.add(name)
                self.parameters.append(name)
        self.on_record(record)


def _output_codes(count: int, flags: dict[int, torch.Tensor]) -> str:
    """Per module (in `named_modules()` order), from the largest |value| of its output: "v"
    finite with a non-zero value, "z" all zero, "n" not finite, "-" no floating output seen.
    One sync per device."""
    codes = ["-"] * count
    by_device: dict[Any, list[int]] = {}
    for index, flag in flags.items():
        by_device.setdefault(flag.device, []).append(index)
    with torch._C.DisableTorchFunction():
        for indices in by_device.values():
            for index, largest in zip(indices, torch.stack([flags[i].float() for i in indices]).tolist()):
                if index < count:
                    codes[index] = "n" if not math.isfinite(largest) else ("v" if largest > 0 else "z")
    return "".join(codes)


def _unwrapped(module: Any) -> Any:
    """The model inside `torch.compile`'s and DDP's wrappers: its names are the same with or
    without them (`Net.fc.weight`, not `OptimizedModule._orig_mod.fc.weight`), so a pull
    request that adds `torch.compile` is still compared with the reference."""
    for _ in range(4):
        inner = getattr(module, "_orig_mod", None)
        if inner is None and type(module).__name__ in ("DistributedDataParallel", "DataParallel", "FullyShardedDataParallel"):
            inner = getattr(module, "module", None)
        if not isinstance(inner, nn.Module):
            return module
        module = inner
    return module


def _first_tensor(value: Any) -> torch.Tensor | None:
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (list, tuple)):
        for item in value:
            found = _first_tensor(item)
            if found is not None:
                return found
    if isinstance(value, dict):
        for item in value.values():
            found = _first_tensor(item)
            if found is not None:
                return found
    logits = getattr(value, "logits", None)  # model-output dataclasses
    return logits if isinstance(logits, torch.Tensor) else None


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None  # the file is strict JSON: no NaN


def _by_device(tensors: list[torch.Tensor]) -> dict[Any, list[int]]:
    groups: dict[Any, list[int]] = {}
    for index, tensor in enumerate(tensors):
        if not (tensor.is_meta or tensor.is_sparse):
            groups.setdefault(tensor.device, []).append(index)
    return groups


def _grad_states(params: list[torch.Tensor], computes_values: bool) -> dict[int, str | None]:
    """Per parameter: None (no gradient), "zero", "nonzero", "nonfinite", or "present" where
    the values cannot be read (meta, sparse). One fused norm per device."""
    states: dict[int, str | None] = {id(p): (None if p.grad is None else "present") for p in params}
    if not computes_values:
        return states
    with_grad = [p for p in params if p.grad is not None]
    grads = [p.grad for p in with_grad]
    with torch._C.DisableTorchFunction(), torch.no_grad():
        for indices in _by_device(grads).values():
            norms = torch.stack([n.double() for n in torch._foreach_norm([grads[i].detach() for i in indices])]).tolist()
            for i, norm in zip(indices, norms):
                states[id(with_grad[i])] = "nonfinite" if not math.isfinite(norm) else ("zero" if norm == 0.0 else "nonzero")
    return states


def _samples(params: list[torch.Tensor]) -> list[torch.Tensor | None]:
    """Up to SAMPLE elements of each parameter at an even stride, copied."""
    out: list[torch.Tensor | None] = []
    with torch._C.DisableTorchFunction(), torch.no_grad():
        for param in params:
            if param.is_meta or param.is_sparse:
                out.append(None)
                continue
            flat = param.detach().reshape(-1)
            stride = max(1, flat.numel() // SAMPLE)
            out.append(flat[::stride][:SAMPLE].clone())
    return out


def _changed(before: list[torch.Tensor | None], after: list[torch.Tensor | None]) -> list[bool | None]:
    with torch._C.DisableTorchFunction(), torch.no_grad():
        return [None if old is None or new is None else not torch.equal(old, new) for old, new in zip(before, after)]
