"""The non-finite probe: where NaN/Inf first appeared, forward (TL735) and backward (TL736).

Watching looks at no value inside a model until something fails. The probe reads three
boundaries, with one host read each:

* the output of every top-level module call (the model, an `nn.CrossEntropyLoss`): NaN or
  +inf there is judged at once; -inf alone is left until it reaches a loss (an attention
  module may return -inf scores on purpose);
* every tensor passed to `backward()`;
* after each `backward()`, the gradients of the parameters it reached (a sum per gradient, or
  one fused norm on a GPU; the exact check only where that is not finite).

What the program runs outside any module (the loss, a normalisation in the training loop)
is recorded without being read (``window``). When a boundary fails, the probe walks back
through those records to the first operation whose inputs were finite; a model call on that
path is replayed with every operation watched (``replay``). A gradient that turns non-finite
is traced the same way, in the same step, before the optimizer writes it into the weights:
each recorded operation of the graph is differentiated alone on its recorded inputs, and a
model call is replayed with a hook on every autograd node.

Values written on purpose are not reported: `-inf` from a literal (`masked_fill(mask,
float("-inf"))`), a `torch.finfo(dtype).min` sentinel, a `log` of a 0/1 mask, and NaN/Inf a
program removes before they reach a loss (`torch.where`, `nan_to_num`, `isfinite` checks).
Gradients that overflow under `GradScaler` are its business: under a scaler only a
gradient with an operation to blame is reported.
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter
from typing import Any

import torch
from torch.nn.modules import module as module_hooks
from torch.optim import optimizer as optimizer_hooks
from torch.utils._pytree import tree_leaves, tree_map

from torchlint.probe import Probe, Site, on_optimizer_created

from . import replay
from .values import (EXPONENTIALS, LOGS, Culprit, Deliberate, Origin, Outside, all_finite, describe_input,
                     describe_output, finite_flags, grad_fn_of, is_float, is_grad_leaf, op_label, version_of)
from .window import Call, Record, Window, flatten, float_results

Tensor = torch.Tensor

BACKWARD = {Tensor.backward, torch.autograd.backward}
#: Calls that read a tensor's metadata or convert it: nothing to record.
QUERIES = frozenset({
    "__get__", "__set__", "__repr__", "__format__", "__len__", "__bool__", "__index__", "__int__", "__float__",
    "__hash__", "__iter__", "__contains__", "__array__", "__reduce_ex__", "__deepcopy__", "item", "tolist", "size",
    "dim", "numel", "stride", "data_ptr", "element_size", "is_contiguous", "is_floating_point", "is_complex",
    "numpy", "storage_offset", "untyped_storage", "get_device", "nelement", "ndimension", "has_names",
    "register_hook", "retain_grad", "requires_grad_", "is_set_to", "isnan", "isinf", "isfinite", "isposinf",
    "isneginf",
})
INPLACE_DUNDERS = frozenset({"__iadd__", "__isub__", "__imul__", "__itruediv__", "__idiv__", "__ipow__",
                             "__ifloordiv__", "__imod__", "__setitem__"})
#: The ops whose static findings (TL107 log of softmax, TL509 manual log-sum-exp) the probe
#: can confirm or find not reproduced.
STATIC_OPS = {torch.log: "TL107", Tensor.log: "TL107", torch.exp: "TL509", Tensor.exp: "TL509"}
#: Replays of module calls per run: each costs one forward (and backward) of that call.
REPLAYS = 8
#: Times per run the gradients are traced after a backward made them non-finite.
GRADIENT_TRACES = 3


class NonfiniteProbe(Probe):
    name = "nonfinite"
    confirms = ("TL107", "TL509")
    runtime_code = "TL735"
    summary = "the first operation that made NaN/Inf out of finite values, forward (TL735) and in backward (TL736)"

    def install(self) -> None:
        self.on = bool(self.ctx.device.computes_values)
        self.stats: Counter = Counter()
        self.found: list[dict[str, Any]] = []
        self.reported: set[tuple] = set()
        self.steps = 0
        self.optimizers = False
        self.in_backward = False
        if not self.on:
            return
        self.thread = threading.get_ident()
        self.depth = 0
        self.window = Window()
        self.starting: Call | None = None
        self.starting_site: Site | None = None
        self.stepping = False
        self.loss: list[Tensor] = []
        self.loss_site: Site | None = None
        self.loss_finite = True
        self.params: dict[int, weakref.ref] = {}
        self.quiet_modules: set[int] = set()
        self.replays_left = REPLAYS
        self.traces_left = GRADIENT_TRACES
        self.scaled: dict[int, tuple[weakref.ref, Any]] = {}
        self.loss_scaled = False
        self.inplace: dict[Any, bool] = {}
        #: Whether the probe still sees every torch call (the run's first `--watch-steps`);
        #: after that it reads the boundaries it can reach without them (see `stop_watching`).
        self.watched = True
        self.handles = [
            module_hooks.register_module_forward_pre_hook(self.guarded(self._enter)),
            module_hooks.register_module_forward_hook(self.guarded(self._leave), with_kwargs=True, always_call=True),
            optimizer_hooks.register_optimizer_step_pre_hook(self.guarded(self._step_begins)),
            optimizer_hooks.register_optimizer_step_post_hook(self.guarded(self._step_ends)),
        ]
        self._unnote_optimizers = on_optimizer_created(self.guarded(self._optimizer_created))
        self._unpatch = _note_scaled_losses(self.scaled)

    def uninstall(self) -> None:
        if not self.on:
            return
        for handle in self.handles:
            handle.remove()
            # torch's handle leaves the hook's with_kwargs flag behind: Dynamo and
            # OptimizedModule would go on seeing "global hooks" (a warning the program never had).
            module_hooks._global_forward_hooks_with_kwargs.pop(handle.id, None)
        self._unpatch()
        self._unnote_optimizers()
        self.window.clear()

    def stop_watching(self) -> None:
        """From here on the probe sees no torch call, only module calls and optimizer steps:
        each top-level module's output is still read (and a NaN/Inf replayed to its op), and
        the gradients are read before each optimizer step instead of after `backward()`; a
        non-finite gradient is traced by replaying the step's last model call."""
        if self.on:
            self.watched = False
            self.window.clear()

    def after_run(self) -> None:
        self.ctx.publish(self, {
            "checked": {key: self.stats[key] for key in ("model outputs", "losses", "backward passes")},
            "replays": self.stats["replays"],
            "found": self.found,
            "values_computed": self.on,
        })

    # -- which calls --------------------------------------------------------------------------
    def watches(self, func: Any) -> bool:
        if not self.on:
            return False
        name = getattr(func, "__name__", "")
        return func in BACKWARD or not (name in QUERIES or name.startswith("_foreach"))

    def _is_inplace(self, func: Any) -> bool:
        known = self.inplace.get(func)
        if known is None:
            name = getattr(func, "__name__", "")
            known = self.inplace[func] = (name.endswith("_") and not name.endswith("__")) or name in INPLACE_DUNDERS
        return known

    def after(self, func: Any, args: tuple, kwargs: dict, result: Any) -> None:
        if threading.get_ident() != self.thread:
            return
        if self.depth:
            code = STATIC_OPS.get(func)
            if code is not None:
                self.ctx.observed(self, code, self.ctx.site(), "no NaN/Inf from it reached a loss or a model's output")
            return
        if func in BACKWARD:
            self._backward_ran(args, kwargs, completed=True)
            return
        if self.stepping:
            return
        with torch._C.DisableTorchFunction():
            self._record(func, args, kwargs, result)

    def failed(self, func: Any, args: tuple, kwargs: dict, exc: BaseException) -> None:
        # A backward that raised (under the program's own detect_anomaly, say): its loss is
        # judged all the same.
        if func in BACKWARD and not self.depth and threading.get_ident() == self.thread:
            self._backward_ran(args, kwargs, completed=False)

    def _record(self, func: Any, args: tuple, kwargs: dict, result: Any) -> None:
        inplace = self._is_inplace(func)
        outputs = float_results(result)
        if not outputs and inplace and args and isinstance(args[0], Tensor) and is_float(args[0]):
            outputs = [args[0]]  # `x[mask] = value` returns None
        if not outputs:
            return
        inputs, scalars = flatten(args, kwargs)
        versions: list[Any] = [version_of(t) for t in inputs]
        if inplace and inputs:
            versions[0] = None  # the target's values before the edit: see Window.finite_at
        site = self.ctx.site()
        op = op_label(getattr(func, "__name__", "") or str(func))
        code = STATIC_OPS.get(func)
        if code is not None:
            self.ctx.observed(self, code, site, "no NaN/Inf from it reached a loss or a model's output")
        self.window.add(Record(
            index=0, op=op, site=site, func=func, args=args, kwargs=kwargs, inputs=inputs, input_versions=versions,
            scalars=scalars, outputs=outputs, output_versions=[version_of(t) for t in outputs], inplace=inplace,
        ))

    # -- top-level module calls -----------------------------------------------------------------
    def _enter(self, module: torch.nn.Module, args: tuple) -> None:
        if threading.get_ident() != self.thread:
            return
        self.depth += 1
        if self.depth != 1 or self.stepping:
            return
        if not self.watched:
            # Kept until the next model call, not until a backward the probe no longer sees:
            # the call's tensors are kept cut from the program's graph (see `_cut`).
            args = tuple(_cut(t) for t in args)
        cuda_rng = None
        if self.ctx.device.name == "cuda" and torch.cuda.is_initialized():
            cuda_rng = torch.cuda.get_rng_state()
        autocast = tuple((device, torch.get_autocast_dtype(device)) for device in ("cpu", "cuda")
                         if torch.is_autocast_enabled(device))
        self.starting = Call(
            module=module, rng=torch.get_rng_state(), cuda_rng=cuda_rng, grad_enabled=torch.is_grad_enabled(),
            autocast=autocast, versions=[(t, version_of(t)) for t in args if isinstance(t, Tensor)],
        )
        self.starting_site = self.ctx.site()

    def _leave(self, module: torch.nn.Module, args: tuple, *rest: Any) -> None:
        # (kwargs, output) after a forward that returned; torch calls an always-called global
        # hook with (output) alone when forward raised: then there is nothing to look at.
        if threading.get_ident() != self.thread:
            return
        self.depth = max(self.depth - 1, 0)
        if self.depth:
            return
        call, self.starting = self.starting, None
        if call is None or call.module is not module or len(rest) != 2:
            return
        kwargs, output = rest
        if not self.watched:
            self.window.clear()  # no backward() is seen to clear it: only this call is kept
            with torch._C.DisableTorchFunction():
                args, kwargs, output = tree_map(_cut, (args, kwargs, output))
        with torch._C.DisableTorchFunction():
            outputs = [t for t in tree_leaves(output) if isinstance(t, Tensor) and is_float(t)]
            inputs, scalars = flatten(args, kwargs)
            record = self.window.add(Record(
                index=0, op=type(module).__name__, site=self.starting_site, func=None, args=args, kwargs=kwargs,
                inputs=inputs, input_versions=[version_of(t) for t in inputs], scalars=scalars, outputs=outputs,
                output_versions=[version_of(t) for t in outputs], call=call,
            ))
            if outputs:
                self._check_call(record)
            if not call.grad_enabled and not self.window.has_graph():
                # An evaluation loop: no backward will need what ran before this call.
                self.window.keep_from(record.index)

    def _check_call(self, record: Record) -> None:
        self.stats["model outputs"] += 1
        flags = record.notes["finite"] = finite_flags(record.outputs)
        if all(flags):
            return
        bad = [t for t, ok in zip(record.outputs, flags) if not ok]
        # -inf alone may be a mask the module returns on purpose: judged if it reaches a loss.
        if not any(bool(torch.isnan(t).any()) or bool(torch.isposinf(t).any()) for t in bad):
            return
        origin = self._judge_call(record)
        if isinstance(origin, Culprit):
            where = f" called at {record.site.short()}" if record.site else ""
            self._report_forward(origin, f"the output of `{record.op}`{where}")

    def _judge_call(self, record: Record) -> Origin:
        """Where a module call's NaN/Inf came from: its inputs, or an op inside it (replayed)."""
        call = record.call
        assert call is not None
        if call.judged:
            return call.origin
        call.judged = True
        for value, version in zip(record.inputs, record.input_versions):
            if is_float(value) and self.window.finite_at(record, value, version) is False:
                call.origin = self.window.origin_of(value, self._judge_call, before=record.index)
                return call.origin
        if id(call.module) in self.quiet_modules or self.replays_left <= 0:
            return None
        self.replays_left -= 1
        self.stats["replays"] += 1
        try:
            call.origin = replay.find_forward(self.ctx, record)
        except Exception as exc:  # a call that cannot run twice (it raised): no op to name
            self.stats["replays failed"] += 1
            self.stats[f"replay error: {type(exc).__name__}"] += 1
            call.origin = None
        if isinstance(call.origin, (Deliberate, Outside)):
            self.quiet_modules.add(id(call.module))
        return call.origin

    # -- backward -----------------------------------------------------------------------------
    def _backward_ran(self, args: tuple, kwargs: dict, completed: bool) -> None:
        """After `backward()`: the loss it was given (the forward records are still there, the
        weights not yet stepped), then the gradients it made; then the step's records go."""
        self.stats["backward passes"] += 1
        self.in_backward = True
        try:
            with torch._C.DisableTorchFunction():
                self._check_loss(args, kwargs)
                if completed and self.loss_finite and self.loss and self.traces_left > 0:
                    self._check_gradients()
        finally:
            self.in_backward = False
            self.window.clear()
            self.loss = []

    def _check_loss(self, args: tuple, kwargs: dict) -> None:
        first = args[0] if args else kwargs.get("tensors", kwargs.get("self"))
        tensors = [first] if isinstance(first, Tensor) else [t for t in first or () if isinstance(t, Tensor)]
        self.loss = [t for t in tensors if is_float(t)]
        self.loss_site = self.ctx.site()
        self.loss_finite = True
        if not self.loss:
            return
        self.stats["losses"] += 1
        # A loss scaled by GradScaler may overflow on purpose: the loss it scaled is the one to judge.
        unscaled = [self._unscaled(t) for t in self.loss]
        self.loss_scaled = any(u is not t for u, t in zip(unscaled, self.loss))
        flags = finite_flags(unscaled)
        if all(flags):
            return
        self.loss_finite = False
        for loss, ok in zip(unscaled, flags):
            if ok:
                continue
            origin = self.window.origin_of(loss, self._judge_call)
            if isinstance(origin, Culprit):
                where = f" at {self.loss_site.short()}" if self.loss_site else ""
                self._report_forward(origin, f"the loss passed to `backward()`{where}")
                return

    def _check_gradients(self) -> None:
        leaves = self._leaves()
        grads = [(leaf, leaf.grad) for leaf in leaves if isinstance(leaf.grad, Tensor) and is_float(leaf.grad)]
        if not grads:
            return
        bad = [leaf for (leaf, _), ok in zip(grads, finite_flags([g for _, g in grads])) if not ok]
        if not bad:
            return
        self.traces_left -= 1
        culprit = self._gradient_culprit()
        if culprit is None and self.loss_scaled:
            return  # an overflow GradScaler skips the step for: what it is for
        names = self._names(bad)
        reached = f"the gradient of 1 parameter ({names})" if len(bad) == 1 else f"the gradients of {len(bad)} parameters ({names})"
        if self.watched:
            where = f" at {self.loss_site.short()}" if self.loss_site else ""
            made, site = f"`backward()`{where} of a finite loss made {reached}", self.loss_site
        else:
            made, site = f"{reached} turned", self.ctx.site()
            # The step about to run writes them into the weights: every later value is NaN.
            self.traces_left = 0
        if culprit is None:
            unnamed = ("no operation of this step could be blamed (it could not be replayed)" if self.watched else
                       "after the watched steps only model calls are replayed, and none made it (the operation may "
                       f"be outside the model, in the loss); `--watch-steps {self._step()}` watches every operation "
                       "up to this step")
            self._report("TL736", None, site, f"{made} NaN/Inf ({self._when()}); {unnamed}", {"parameters": len(bad)})
            return
        site = culprit.site
        at = f" at {site.short()}" if site else ""
        details = "; ".join(culprit.inputs)
        message = (
            f"the derivative of `{culprit.op}`{at} is NaN/Inf at the values it got ({culprit.output})"
            f"{': ' + details if details else ''}; {_backward_hint(culprit.op)}; {made} NaN/Inf ({self._when()})"
        )
        self._report("TL736", culprit, site, message, {"op": culprit.op, "parameters": len(bad)})

    def _gradient_culprit(self) -> Culprit | None:
        """The last recorded operation of this backward's graph (the first its backward ran)
        whose own derivative is non-finite at its recorded inputs."""
        # Unwatched, no loss was seen: the model call kept (the step's last) is replayed.
        ids = {id(node) for node in _graph(self.loss)} if self.loss else None
        for record in reversed(self.window.records):
            if ids is None and record.call is None:
                continue
            if ids is not None and not any(fn is not None and id(fn) in ids for fn in map(grad_fn_of, record.outputs)):
                continue
            if record.call is not None:
                if self.replays_left <= 0:
                    continue
                self.replays_left -= 1
                self.stats["replays"] += 1
                try:
                    found = replay.find_backward(self.ctx, record)
                except Exception as exc:
                    self.stats["replays failed"] += 1
                    self.stats[f"replay error: {type(exc).__name__}"] += 1
                    found = None
            else:
                try:
                    found = _local_backward(record)
                except Exception:  # an op that cannot run alone again: try the one before
                    found = None
            if found is not None:
                return found
        return None

    def _unscaled(self, loss: Tensor) -> Tensor:
        ref, original = self.scaled.get(id(loss), (None, None))
        return original if ref is not None and ref() is loss and isinstance(original, Tensor) else loss

    def _leaves(self) -> list[Tensor]:
        leaves: dict[int, Tensor] = {}
        for record in self.window.records:
            if record.call is not None:
                for param in record.call.module.parameters():
                    if param.requires_grad:
                        leaves[id(param)] = param
            for value in record.inputs:
                if isinstance(value, Tensor) and is_grad_leaf(value):
                    leaves[id(value)] = value
        for key, ref in list(self.params.items()):
            param = ref()
            if param is None:
                del self.params[key]
            else:
                leaves[key] = param
        return list(leaves.values())

    def _names(self, params: list[Tensor]) -> str:
        names: dict[int, str] = {}
        for record in self.window.records:
            if record.call is not None:
                label = type(record.call.module).__name__
                for name, param in record.call.module.named_parameters():
                    names.setdefault(id(param), f"{label}.{name}")
        listed = sorted(names.get(id(p), f"a tensor of shape {tuple(p.shape)}") for p in params)
        shown = ", ".join(f"`{name}`" for name in listed[:4])
        return shown + (f" and {len(listed) - 4} more" if len(listed) > 4 else "")

    # -- optimizer steps ------------------------------------------------------------------------
    def _optimizer_created(self) -> None:
        self.optimizers = True  # from now on a finding names the optimizer step it is in

    def _step_begins(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if threading.get_ident() != self.thread:
            # Another thread's optimizer (a program training a second model in the background):
            # its parameters are not this thread's to read, and reading `.grad` while that
            # thread sets it to None crashed the process.
            return
        self.stepping = True
        for group in optimizer.param_groups:
            for param in group["params"]:
                if isinstance(param, Tensor) and id(param) not in self.params:
                    self.params[id(param)] = weakref.ref(param)
        # Unwatched, `backward()` goes unseen: its gradients are read here, before the step
        # writes them into the weights. Under GradScaler an overflow is the scaler's to skip.
        if not self.watched and self.traces_left > 0 and not self.scaled:
            with torch._C.DisableTorchFunction():
                if not self._gradients_look_finite(optimizer):
                    self._check_gradients()

    @staticmethod
    def _gradients_look_finite(optimizer: Any) -> bool:
        """One pass over the gradients the step is about to apply, every step after the
        watched ones: the parameters are named and traced only when one is not finite."""
        grads = [p.grad for group in optimizer.param_groups for p in group["params"]
                 if isinstance(p, Tensor) and p.grad is not None]
        return all(finite_flags([g for g in grads if not g.is_sparse]))

    def _step_ends(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if threading.get_ident() != self.thread:
            return
        self.stepping = False
        self.steps += 1
        self.window.clear()

    # -- reporting ------------------------------------------------------------------------------
    def _step(self) -> int:
        """The optimizer step under way (1-based); without an optimizer, the backward pass."""
        return self.steps + 1 if self.optimizers else self.stats["backward passes"] + (0 if self.in_backward else 1)

    def _when(self) -> str:
        return f"step {self._step()}" if self.optimizers else f"backward pass {self._step()}"

    def _report_forward(self, culprit: Culprit, boundary: str) -> None:
        site = culprit.site
        at = f" at {site.short()}" if site else ""
        details = "; ".join(culprit.inputs)
        hint = culprit.data.get("hint", "")
        message = (
            f"`{culprit.op}`{at} made {culprit.output} out of finite inputs: {details}"
            f"{'; ' + hint if hint else ''}; they reached {boundary} ({self._when()})"
        )
        self._report("TL735", culprit, site, message, {"op": culprit.op})

    def _report(self, code: str, culprit: Culprit | None, site: Site | None, message: str, data: dict) -> None:
        key = (code, (site.path, site.line) if site else None)
        if key in self.reported:
            return
        self.reported.add(key)
        kind = _static_code(culprit, self.ctx.source(site)) if culprit is not None else None
        self.ctx.evidence(self, code=kind, at=site, sites=[site], runtime_code=code, message=message,
                          data=dict(data, when=self._when()))
        self.found.append({"code": code, "op": data.get("op"), "when": self._when(),
                           "at": [site.path, site.line] if site else None})


def _static_code(culprit: Culprit, source: str) -> str | None:
    """The static rule a finding at this line would be the same bug as: `log` of softmax
    output (TL107), a hand-written log-sum-exp (TL509)."""
    if culprit.op in LOGS or culprit.op in EXPONENTIALS or culprit.op == "log1p":
        if "exp(" in source and "softmax" not in source:
            return "TL509"
        return "TL107" if culprit.op in LOGS else "TL509" if culprit.op in EXPONENTIALS else None
    return None


def _cut(value: Any) -> Any:
    """A model call's tensor as the probe keeps it after the watched steps: the same values
    and version counter (a detached alias), requiring grad if it did, without the program's
    graph behind it. Holding the graph would keep it alive past the program's own last
    reference (a graph `autograd.grad(..., retain_graph=True)` retained), and the optimizer's
    next update of the weights it saved would look like an edit of a graph still to be run
    backward (TL705). A replay cuts its arguments the same way."""
    if isinstance(value, Tensor) and value.grad_fn is not None:
        return value.detach().requires_grad_(value.requires_grad and is_float(value))
    return value


def _backward_hint(op: str) -> str:
    hints = {
        "sqrt": "the derivative of sqrt is infinite at 0 (add an eps inside, or use `torch.linalg.vector_norm`, whose gradient at 0 is 0)",
        "pow": "x**p with p < 1 has an infinite derivative at 0",
        "log": "the derivative of log is infinite at 0, and 0·inf is NaN even where `torch.where` dropped the value",
        "div": "the derivative of a/b is infinite where b is 0, even where `torch.where` dropped the value",
        "acos": "the derivative of acos is infinite at ±1",
        "asin": "the derivative of asin is infinite at ±1",
    }
    return hints.get(op, "its derivative is infinite or undefined at these inputs")


def _graph(tensors: list[Tensor]) -> list[Any]:
    """The autograd nodes behind these tensors (still linked after backward freed their buffers)."""
    nodes, seen = [], set()
    stack = [grad_fn_of(t) for t in tensors]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return nodes


def _local_backward(record: Record) -> Culprit | None:
    """Differentiate one recorded op alone, at its recorded inputs, from all-ones output
    gradients: a non-finite result means its derivative is infinite or undefined there,
    whatever gradient reaches it (0·inf is NaN too)."""
    if record.func is None or record.inplace:
        return None
    if any(v is not None and version_of(t) != v for t, v in zip(record.inputs, record.input_versions)):
        return None
    floats = [t for t in record.inputs if is_float(t)]
    if not floats or not all(all_finite(t) for t in floats):
        return None
    fresh = {id(t): t.detach().requires_grad_(t.requires_grad) for t in floats}
    args, kwargs = tree_map(lambda x: fresh.get(id(x), x) if isinstance(x, Tensor) else x, (record.args, record.kwargs))
    with torch.enable_grad():
        outputs = [o for o in float_results(record.func(*args, **kwargs)) if o.grad_fn is not None]
        wrt = [fresh[id(t)] for t in floats if fresh[id(t)].requires_grad]
        if not outputs or not wrt:
            return None
        grads = torch.autograd.grad(outputs, wrt, [torch.ones_like(o) for o in outputs], allow_unused=True)
    bad = [g for g in grads if g is not None and not all_finite(g)]
    if not bad:
        return None
    from .values import input_labels

    labels = input_labels(record.op, len(floats))
    return Culprit(
        op=record.op, site=record.site, inputs=[describe_input(t, label) for t, label in zip(floats, labels)],
        output=describe_output(bad),
    )


def _note_scaled_losses(scaled: dict[int, tuple[weakref.ref, Any]]) -> Any:
    """Note the tensors `GradScaler.scale` returns, with the loss each scales: the scaled loss
    and its gradients may overflow on purpose (the scaler then skips the step)."""
    scaler = torch.amp.GradScaler
    original = scaler.scale

    def scale(self: Any, outputs: Any) -> Any:
        result = original(self, outputs)
        for key in [key for key, (ref, _) in scaled.items() if ref() is None]:
            del scaled[key]
        if isinstance(result, Tensor) and isinstance(outputs, Tensor) and result is not outputs:
            scaled[id(result)] = (weakref.ref(result), outputs)
        return result

    scaler.scale = scale  # type: ignore[method-assign]

    def restore() -> None:
        scaler.scale = original  # type: ignore[method-assign]

    return restore


PROBE = NonfiniteProbe
