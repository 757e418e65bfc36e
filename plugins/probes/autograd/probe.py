"""Autograd probe: confirms TL103 at the line that edits a tensor in place.

Every tensor autograd saves for backward goes through ``saved_tensors_hooks``: the pack
hook wraps it in a holder that records its version counter and the line that saved it, and
a weak registry maps the tensor (and its base, for views) to live holders. After an in-place
operation (``*_`` methods, ``+=`` and friends, item assignment, ``out=``, ``inplace=True``,
and the ``torch._foreach_*_``/``torch._fused_*_`` updates optimizers make on a GPU; around
an optimizer's ``step()``, which the dispatch leaves unwatched, the versions of the
parameters a live graph saved) the probe compares versions and notes the mutation line;
when a backward pass then needs the edited tensor, the edit is reported at that line
(``detect_anomaly`` would point at the op that saved the tensor instead). A graph nobody
runs backward through (the second output of a model call, kept in a variable until the
next step) is not reported however its saved tensors change. A holder dies with its graph
(after backward), so edits after ``backward()`` (the optimizer's) are not even noted.

Installing pack hooks turns off autograd's own version check for the tensors they handle,
so the unpack hook repeats it and raises the same error, naming the mutation line: a
program behaves exactly as without torchlint. In-place edits of a leaf that requires grad
(or a view of one) are reported before torch raises its own error.
"""

from __future__ import annotations

import re

import weakref
from typing import Any

import torch
import torch.nn.functional as F
from torch.optim import optimizer as optimizer_hooks

from torchlint.probe import Probe, Site, op_name, passes_tensor

Tensor = torch.Tensor
_is_compiling = torch.compiler.is_compiling

_AUGMENTED = {"__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
              "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__", "__imatmul__", "__setitem__"}
_NOT_DATA = {"requires_grad_", "share_memory_", "record_stream", "retain_grad", "_fix_weakref"}
_INPLACE_KEYWORD = {F.relu, F.relu6, F.elu, F.selu, F.celu, F.leaky_relu, F.hardtanh, F.rrelu, F.threshold,
                    F.hardsigmoid, F.hardswish, F.silu, F.mish, F.dropout, F.dropout1d, F.dropout2d, F.dropout3d,
                    F.alpha_dropout, F.feature_alpha_dropout}


def _mutating_name(func: Any) -> bool:
    name = getattr(func, "__name__", "")
    return name in _AUGMENTED or (name.endswith("_") and not name.startswith("_") and name not in _NOT_DATA)


def _mutating_list(func: Any) -> bool:
    """`torch._foreach_addcdiv_(params, ...)`, `torch._fused_adam_(params, ...)`: how optimizers
    update every parameter at once on a GPU (and on the CPU with `foreach=True`): in place on
    each tensor of the first argument."""
    name = getattr(func, "__name__", "")
    return name.endswith("_") and name.startswith(("_foreach_", "_fused_"))


class _Saved:
    __slots__ = ("tensor", "version", "saved_at", "mutated_at", "mutated_by", "reported", "type_name", "producer",
                 "__weakref__")

    def __init__(self, tensor: Tensor, saved_at: Site | None, producer: tuple[str, int] | None = None) -> None:
        self.tensor = tensor
        self.version = tensor._version
        #: (grad_fn class name, output number) of the tensor when it was saved, for autograd's
        #: message ("which is output 0 of Sigmoid"); None for a leaf.
        self.producer = producer
        self.saved_at = saved_at
        self.mutated_at: Site | None = None
        #: The edit, as the message names it (`` `add_` ``, ``update by `Adam.step()` ``).
        self.mutated_by = ""
        self.reported = False
        #: `torch.cuda.FloatTensor`, as the program saw the edited tensor (read at the edit: a
        #: simulated GPU's placement is the edited tensor's, not this alias's).
        self.type_name: str | None = None


class AutogradProbe(Probe):
    name = "autograd"
    order = 30
    confirms = ("TL103",)
    runtime_code = "TL705"
    summary = "in-place edits of tensors autograd saved, and of leaves that require grad"

    #: Dead entries are swept after this many packs at least (a weakref callback per saved
    #: tensor cost more than the sweep), or after as many as the last sweep kept (`_sweep`).
    SWEEP_EVERY = 4096

    def install(self) -> None:
        self.saved: dict[int, list[weakref.ref]] = {}
        self._packs_since_sweep = 0
        self._sweep_after = self.SWEEP_EVERY
        self._leaf_reported: set[int] = set()
        # The unpack hook stays unguarded: it raises autograd's own error on purpose.
        self._packer = self.guarded(self._pack, fallback=passes_tensor)
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._packer, self._unpack)
        self._hooks.__enter__()
        self._hooks_on = True
        self.packing = True
        # The dispatch steps aside during an optimizer's step(): its in-place update of
        # weights a retained graph saved (`backward(retain_graph=True)`, then `step()`, then
        # a second backward through the same graph) is found by comparing versions around it.
        self._stepping: list[Tensor] = []
        self._step_hooks = [
            optimizer_hooks.register_optimizer_step_pre_hook(self.guarded(self._before_step)),
            optimizer_hooks.register_optimizer_step_post_hook(self.guarded(self._after_step)),
        ]

    def _before_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        saved = self.saved
        if saved and self.packing:
            self._stepping = [p for group in optimizer.param_groups for p in group["params"] if id(p) in saved]

    def _after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        params, self._stepping = self._stepping, []
        for param in params:
            self._mutated(f"update by `{type(optimizer).__name__}.step()`", param)

    def _remove_step_hooks(self) -> None:
        for handle in self._step_hooks:
            handle.remove()
        self._step_hooks = []

    def keeps_watching(self, steps: int) -> bool:
        # The hooks come off only when they are the innermost pair: while another probe's
        # pair sits on them (the memory probe's, during its own window), this one waits.
        return super().keeps_watching(steps) or (self._hooks_on and not self._innermost())

    def _innermost(self) -> bool:
        return torch._C._autograd._top_saved_tensors_default_hooks(True) == (self._packer, self._unpack)

    def stop_watching(self) -> None:
        # Tensors saved from now on keep autograd's own version check (and its error, which
        # names the op that saved the tensor, not the edit); holders already made still
        # unpack through this probe. The hooks come off only when they are the innermost
        # pair: taking off another pair (the program's) would change its nesting.
        self.packing = False
        self._remove_step_hooks()
        if self._hooks_on and self._innermost():
            self._hooks.__exit__(None, None, None)
            self._hooks_on = False

    def uninstall(self) -> None:
        self._remove_step_hooks()
        if self._hooks_on:
            self._hooks.__exit__(None, None, None)
            self._hooks_on = False

    # -- saved tensors ----------------------------------------------------------------------
    def _pack(self, tensor: Tensor) -> _Saved | Tensor:
        if _is_compiling() or not self.packing:  # compiling first: Dynamo must not guard on `packing`
            # Dynamo traces this hook into compiled graphs, where lines and version counters
            # mean nothing: keep the tensor as autograd would (no graph break, no recompiles).
            return tensor
        # The holder keeps a detached alias (same storage, same version counter): holding the
        # tensor itself would tie a saved output to its own grad_fn, a reference cycle that
        # keeps every graph not run backward (an eval pass with grad on) alive until the cyclic
        # GC, where the next optimizer step "modifies" its saved weights. The registry's ids
        # may then be reused, which the version comparison in `after` tolerates.
        grad_fn = tensor.grad_fn
        holder = _Saved(tensor.detach(), self.ctx.site(),
                        None if grad_fn is None else (type(grad_fn).__name__, tensor.output_nr))
        ref = weakref.ref(holder)
        saved = self.saved
        saved.setdefault(id(tensor), []).append(ref)
        base = tensor._base
        if base is not None:
            saved.setdefault(id(base), []).append(ref)
        self._packs_since_sweep += 1
        if self._packs_since_sweep >= self._sweep_after:
            self._sweep()
        return holder

    def _unpack(self, holder: _Saved | Tensor) -> Tensor:
        if not isinstance(holder, _Saved):
            return holder
        tensor = holder.tensor
        if tensor._version != holder.version:
            where = f" at {holder.mutated_at.short()}" if holder.mutated_at else ""
            # Autograd's own words (its check does not run while these hooks hold the tensor);
            # torchlint's note is printed after the traceback, not inside torch's message.
            error = RuntimeError(version_error(holder.type_name or self.ctx.device.type_name(tensor), list(tensor.shape),
                                               holder.producer, tensor._version, holder.version))
            self.ctx.note(error, f"the tensor was modified in place{where}")
            if holder.mutated_at is not None:  # else no evidence names it: the crash stays a TL702
                self.guarded(self._report_edit)(holder)
                self.ctx.explain(error, "TL103")
            raise error
        return tensor

    def _sweep(self) -> None:
        """Drop holders whose graph is gone."""
        self._packs_since_sweep = 0
        live = {}
        held = 0
        for key, refs in self.saved.items():
            kept = [ref for ref in refs if ref() is not None]
            if kept:
                live[key] = kept
                held += len(kept)
        self.saved = live
        # A sweep reads every holder in the registry. Inside one long forward (an RNN cell
        # called for each of 1000 time steps) none has died yet, so a sweep every
        # SWEEP_EVERY packs read the whole forward's holders again each time: quadratic in
        # the tensors one forward saves. Waiting for as many packs as this sweep kept
        # makes each sweep's reading paid for by the packs since the last one (linear), and
        # still bounds the dead entries by the live ones.
        self._sweep_after = max(self.SWEEP_EVERY, held)

    # -- in-place operations ----------------------------------------------------------------
    def watches(self, func: Any) -> bool:
        # `out=` is honoured on the functions watched here; watching every torch.* function
        # for a rare `out=` would cost every operation a Python call.
        return _mutating_name(func) or func in _INPLACE_KEYWORD or _mutating_list(func)

    def _target(self, func: Any, args: tuple, kwargs: dict) -> Tensor | None:
        if kwargs:
            out = kwargs.get("out")
            if isinstance(out, Tensor):
                return out
            if kwargs.get("inplace") is True and func in _INPLACE_KEYWORD:
                return args[0] if args and isinstance(args[0], Tensor) else None
        if args and isinstance(args[0], Tensor) and _mutating_name(func):
            return args[0]
        return None

    def before(self, func: Any, args: tuple, kwargs: dict) -> None:
        if not torch.is_grad_enabled():
            return
        target = self._target(func, args, kwargs)
        if target is None:
            return
        site = self.ctx.site()
        self.ctx.observed(self, "TL103", site, "no tensor autograd needed was edited here")
        if not target.requires_grad:
            return
        base = target._base
        if target.is_leaf:
            what = "a leaf tensor that requires grad"
        elif base is not None and base.is_leaf and base.requires_grad:
            what = "a view of a leaf tensor that requires grad"
        else:
            return
        where = f" at {site.short()}" if site else ""
        if self.ctx.evidence(self, code="TL103", at=site, sites=[site],
                             message=f"in-place `{op_name(func)}`{where} on {what} (outside torch.no_grad())",
                             data={"op": op_name(func), "kind": "leaf"}):
            self._leaf_reported.add(id(target))

    def after(self, func: Any, args: tuple, kwargs: dict, result: Any) -> None:
        if not self.saved:
            return
        if _mutating_list(func):
            if args and isinstance(args[0], (list, tuple)):
                for target in args[0]:
                    if isinstance(target, Tensor):
                        self._mutated(f"`{op_name(func)}`", target)
            return
        target = self._target(func, args, kwargs)
        if target is not None:
            self._mutated(f"`{op_name(func)}`", target)

    def _mutated(self, op: str, target: Tensor) -> None:
        refs = list(self.saved.get(id(target), ()))
        if target._base is not None:
            refs += self.saved.get(id(target._base), ())
        for ref in refs:
            holder = ref()
            if holder is None or holder.mutated_at is not None or holder.tensor._version == holder.version:
                continue
            # Noted, not yet reported: the graph that saved the tensor may never be run
            # backward (a second output nobody differentiates, `validity, _ = D(x)`, kept
            # until the next step). The backward that needs it reports the edit (`_unpack`).
            holder.mutated_at = self.ctx.site()
            holder.mutated_by = op
            holder.type_name = self.ctx.device.type_name(target)

    def _report_edit(self, holder: _Saved) -> None:
        """The evidence for an edit a backward pass found, at the edit's line."""
        if holder.reported:
            return
        holder.reported = True
        site, op = holder.mutated_at, holder.mutated_by
        where = f" at {site.short()}" if site else ""
        saved = f" by the operation at {holder.saved_at.short()} `{self.ctx.source(holder.saved_at)}`" if holder.saved_at else ""
        self.ctx.evidence(
            self,
            code="TL103",
            at=site,
            sites=[site],
            message=f"in-place {op}{where} modified a tensor saved for backward{saved}; backward failed",
            data={"op": op.strip("`"), "kind": "saved", "saved_at": [holder.saved_at.path, holder.saved_at.line] if holder.saved_at else None},
        )

    def failed(self, func: Any, args: tuple, kwargs: dict, exc: BaseException) -> None:
        target = self._target(func, args, kwargs)
        if target is not None and id(target) in self._leaf_reported:
            self.ctx.explain(exc, "TL103")


PROBE = AutogradProbe


_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")


def version_error(type_name: str, shape: list[int], producer: tuple[str, int] | None, version: int, expected: int) -> str:
    """The message autograd raises when a saved tensor was modified in place (torch's
    SavedVariable::unpack, as torch 2.13 words it)."""
    made = ""
    if producer is not None:
        name, output = producer
        made = f", which is output {output} of {_BACKWARD_SUFFIX.sub('', name)},"
    if torch.is_anomaly_enabled():
        hint = ("Hint: the backtrace further above shows the operation that failed to compute its gradient. "
                "The variable in question was changed in there or anywhere later. Good luck!")
    else:
        hint = ("Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
                "with torch.autograd.set_detect_anomaly(True, check_nan=False).")
    return ("one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"[{type_name} {shape}]{made} is at version {version}; expected version {expected} instead. {hint}")
