"""The optimizer invariants: what must hold at every optimizer step of a healthy run.

Read at the steps ``schedule.is_read`` picks, from torch's global optimizer step hooks, for
each optimizer on its own:

* TL744 every parameter of a trained model that gets a gradient is held by some optimizer;
* TL745 the gradients a step used are cleared before the next backward adds to them
  (``clearing``);
* TL746 a parameter with ``requires_grad=False`` does not change in a step;
* TL747 the model an optimizer steps is in ``train()`` mode;
* TL756 a part the settings call frozen (``freeze_encoder=True``) does not train
  (``freezing``), read at the first step;
* TL752 parameters that learned keep learning: no all-zero gradients, or updates that move
  nothing, at every read step from some step to the end of the run.

Nothing is hooked per torch operation, so the checks cost the run the same inside and after
the probes' watch window.
"""

from __future__ import annotations

import gc
import sys
import weakref
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.optim import optimizer as optimizer_hooks

from torchlint.plugins.probes.invariants.clearing import ClearingWatch, watch
from torchlint.plugins.probes.invariants.freezing import unapplied_freezes
from torchlint.plugins.probes.invariants.schedule import FIRST, is_read
from torchlint.probe import (
    Probe, Site, counted as _count, kept, listed, models_in_reach, norms, parameter_label,
    parameter_names, prefixes, step_closure,
)

#: Read steps in a row, at the end of the run, that make a stall (TL752), after at least
#: LEARNED_READS read steps at which the parameter learned.
STALLED_READS = 3
LEARNED_READS = 2
LEARNED, ZERO, KEPT = "learned", "zero", "kept"
#: Read steps with a gradient that make a parameter outside every optimizer a finding (TL744):
#: one could be a gradient left from a step the program took some other way.
OUTSIDE_READS = 2
#: Layers whose behaviour depends on the model's mode: training in eval() changes them.
MODE_LAYERS = (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._BatchNorm)


@dataclass
class OptimizerState:
    """What the probe knows of one optimizer between its hooks."""

    steps: int = 0
    site: Site | None = None
    #: Set after a read step when the next step is read too: id(param) -> its watch.
    clearing: dict[int, ClearingWatch] = field(default_factory=dict)
    #: Between the hooks of a read step: frozen parameters with a gradient, and their prefixes.
    frozen: list[tuple[list[torch.Tensor], Any]] = field(default_factory=list)
    #: Between the hooks of a read step: parameters with a gradient, their and its prefixes.
    moving: list[tuple[list[torch.Tensor], Any, Any]] = field(default_factory=list)
    #: id(param) -> (step, what happened to it) at each read step: LEARNED (it had a gradient
    #: and the step moved it), ZERO (no gradient, or an all-zero one), KEPT (a gradient, no move).
    history: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    #: Read steps at which the step moved some parameter.
    moved_any: set[int] = field(default_factory=set)
    stale_reported: bool = False
    #: At the last read step: ids of the parameters it held, and how many of them required grad.
    #: Kept because the optimizer may be gone when the run is judged (a collection after the
    #: program's end frees one in a reference cycle).
    held: set[int] | None = None
    trainable_held: int = 0


class OptimizerInvariantsProbe(Probe):
    name = "invariants"
    order = 55
    runtime_code = "TL744"
    summary = "optimizer invariants at every read step: parameters in no optimizer, gradients not cleared, frozen parameters that move, eval-mode training, stalls"

    def install(self) -> None:
        self.states: dict[int, OptimizerState] = {}
        self.optimizers: list[weakref.ref] = []
        self.params: dict[int, weakref.ref] = {}
        self.names: dict[int, str] = {}
        #: id(param) -> read steps it had a gradient, for the parameters of the models in reach.
        self.with_grad: dict[int, int] = {}
        #: id(param) -> id of the model in reach it belongs to; id(model) -> the model.
        self.owner: dict[int, int] = {}
        self.models: dict[int, weakref.ref] = {}
        #: The models in reach at the last survey, largest first, and those an optimizer steps.
        self.roots: list[tuple[str, weakref.ref]] = []
        self.stepped_models: set[int] = set()
        self.first_site: Site | None = None
        self.reported: set[str] = set()
        self.judged = False
        self.handles = [
            optimizer_hooks.register_optimizer_step_pre_hook(self.guarded(self._before_step)),
            optimizer_hooks.register_optimizer_step_post_hook(self.guarded(self._after_step)),
        ]

    def uninstall(self) -> None:
        for handle in self.handles:
            handle.remove()
        for state in self.states.values():
            _disarm(state)
        self._judge()

    # -- the hooks ---------------------------------------------------------------------------
    def _state(self, optimizer: Any) -> OptimizerState:
        state = self.states.get(id(optimizer))
        if state is None:
            state = self.states[id(optimizer)] = OptimizerState()
            self.optimizers.append(weakref.ref(optimizer))
        return state

    def _before_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        state = self._state(optimizer)
        step = state.steps + 1
        stale = [key for key, clearing in state.clearing.items() if clearing.stale]
        _disarm(state)
        if not is_read(step) or step_closure(args, kwargs):
            return  # a closure makes its gradients inside step() (LBFGS): nothing to read before
        site = self.ctx.site()
        state.site = state.site or site
        self.first_site = self.first_site or site
        params = _held(optimizer)
        state.held, state.trainable_held = {id(p) for p in params}, sum(p.requires_grad for p in params)
        roots = self._look_at_models(sys._getframe(1), params, step)
        if step == 1:
            self._check_freezes(sys._getframe(1), roots, params, site)
        if stale:
            self._report_stale(state, stale, step, site)
        if not self.ctx.device.computes_values:
            return
        with torch._C.DisableTorchFunction(), torch.no_grad():
            frozen = [p for p in params if not p.requires_grad and p.grad is not None and _readable(p)]
            state.frozen = [(frozen, prefixes(frozen))] if frozen else []
            trainable = [p for p in params if p.requires_grad and _readable(p)]
            with_grad = [p for p in trainable if p.grad is not None]
            grad_norms = dict(zip(map(id, with_grad), norms([p.grad for p in with_grad])))
            moving = [p for p in with_grad if grad_norms[id(p)] > 0]  # NaN: no verdict
            for param in trainable:
                if param.grad is None or grad_norms[id(param)] == 0.0:
                    state.history.setdefault(id(param), []).append((step, ZERO))
                    self.params.setdefault(id(param), weakref.ref(param))
            state.moving = [(moving, prefixes(moving), prefixes([p.grad for p in moving]))] if moving else []

    def _after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        state = self._state(optimizer)
        state.steps += 1
        step = state.steps
        if step_closure(args, kwargs):
            return
        if state.frozen or state.moving:
            with torch._C.DisableTorchFunction(), torch.no_grad():
                for group, before in state.frozen:
                    changed = [p for p, (old, new) in zip(group, _pairs(before, prefixes(group))) if not torch.equal(old, new)]
                    if changed:
                        self._report_frozen(state, changed, step)
                for group, before, grads in state.moving:
                    for param, unmoved in zip(group, kept(before, prefixes(group), grads)):
                        state.history.setdefault(id(param), []).append((step, KEPT if unmoved else LEARNED))
                        self.params.setdefault(id(param), weakref.ref(param))
                        if not unmoved:
                            state.moved_any.add(step)
            state.frozen, state.moving = [], []
        if is_read(step + 1) and not state.stale_reported:
            for param in _held(optimizer):
                clearing = watch(param, self.guarded)
                if clearing is not None:
                    state.clearing[id(param)] = clearing

    # -- the models in reach -----------------------------------------------------------------
    def _look_at_models(self, frame: Any, params: list[torch.Tensor], step: int) -> list[tuple[str, nn.Module]]:
        """Names, owners and gradients of the models in reach; TL747 for one in eval(). The
        frames and every parameter are surveyed at the first steps and at steps 16, 32, 64...;
        the read steps between look only at the modes of the models found then."""
        if not (step <= FIRST or step & (step - 1) == 0) and self.roots:
            roots = [(label, model) for label, ref in self.roots if (model := ref()) is not None]
            for label, model in roots:
                if id(model) in self.stepped_models and not model.training:
                    self._report_eval_mode(label, model)
            return roots
        # A parameter belongs to, and is named in, the largest model in reach that holds it
        # (`Sequential.1.weight` of `model`, not `Linear.weight` of its `head`).
        roots = sorted(models_in_reach(self.ctx.frames, frame), key=lambda root: -sum(1 for _ in root[1].parameters()))
        self.roots = [(label, weakref.ref(model)) for label, model in roots]
        for key, name in parameter_names(roots).items():
            self.names.setdefault(key, name)
        held = {id(p) for p in params}
        for label, model in roots:
            self.models.setdefault(id(model), weakref.ref(model))
            stepped = False
            for module in model.modules():
                # A frozen part in eval() inside a training model (a perceptual-loss network)
                # is meant to be left alone: its parameters are not expected in an optimizer.
                meant_frozen = model.training and not module.training
                for param in module.parameters(recurse=False):
                    stepped = stepped or id(param) in held
                    self.owner.setdefault(id(param), id(model))
                    if param.requires_grad and param.grad is not None and not meant_frozen:
                        self.with_grad[id(param)] = self.with_grad.get(id(param), 0) + 1
                        self.params.setdefault(id(param), weakref.ref(param))
            if stepped:
                self.stepped_models.add(id(model))
            if stepped and not model.training:
                self._report_eval_mode(label, model)
        return roots

    def _check_freezes(self, frame: Any, roots: list, params: list[torch.Tensor], site: Site | None) -> None:
        """TL756: settings in reach that call a part of the model frozen while it trains."""
        for unapplied in unapplied_freezes(self.ctx.frames, frame, roots, {id(p) for p in params}):
            method = f" (is `{unapplied.method}()` ever called?)" if unapplied.method else ""
            self.ctx.evidence(
                self, code=None, at=site, runtime_code="TL756",
                message=(
                    f"`{unapplied.key}` is True, but all {unapplied.parameters} parameters of `{unapplied.part}` require "
                    f"grad and this optimizer updates them: the freeze was never applied{method}"
                ),
                data={"setting": unapplied.key, "module": unapplied.part},
            )

    # -- findings ----------------------------------------------------------------------------
    def _report_stale(self, state: OptimizerState, stale: list[int], step: int, site: Site | None) -> None:
        state.stale_reported = True
        self.ctx.evidence(
            self, code=None, at=site, runtime_code="TL745",
            message=(
                f"the gradients of step {step - 1} were still in `.grad` when the next backward pass added to them, "
                f"and step {step} applied both: {self._listed(stale)}; nothing cleared them between the steps — call "
                "`optimizer.zero_grad()` (on this optimizer) once per step"
            ),
            data={"parameters": [self._name(key) for key in stale], "step": step},
        )

    def _report_frozen(self, state: OptimizerState, changed: list[torch.Tensor], step: int) -> None:
        if "TL746" in self.reported:
            return
        self.reported.add("TL746")
        keys = [id(p) for p in changed]
        self.ctx.evidence(
            self, code=None, at=state.site, runtime_code="TL746",
            message=(
                f"{_count(keys)} with `requires_grad=False` changed in optimizer step {step}: {self._listed(keys)}; "
                "their `.grad` from before they were frozen is still set, so momentum and weight decay keep moving "
                "them — set `p.grad = None` when freezing, or leave them out of the optimizer"
            ),
            data={"parameters": [self._name(key) for key in keys], "step": step},
        )

    def _report_eval_mode(self, label: str, model: nn.Module) -> None:
        layers = sorted({type(m).__name__ for m in model.modules() if isinstance(m, MODE_LAYERS)})
        if not layers or "TL747" in self.reported:
            return
        self.reported.add("TL747")
        self.ctx.evidence(
            self, code=None, at=self.ctx.site(), runtime_code="TL747",
            message=(
                f"the optimizer steps `{label}` while it is in eval() mode: its {', '.join(layers)} layers train with "
                "dropout off and frozen normalisation statistics; call `model.train()` at the start of each training "
                "epoch (an evaluation's `model.eval()` stays in force)"
            ),
            data={"model": label, "layers": layers},
        )

    def _judge(self) -> None:
        if self.judged or not self.states:
            return
        self.judged = True
        self._judge_outside()
        self._judge_stalls()

    def _judge_outside(self) -> None:
        # id(optimizer) -> (ids of the parameters it holds, how many require grad): what each
        # live optimizer holds now, what a stepped one held at its last read step.
        holdings: dict[int, tuple[set[int], int]] = {}
        live = [ref() for ref in self.optimizers]
        # Optimizers that never stepped in reach of a hook hold parameters too.
        live += [o for o in gc.get_objects() if _is_optimizer(o)]
        for optimizer in filter(None, live):
            params = _held(optimizer)
            holdings[id(optimizer)] = ({id(p) for p in params}, sum(p.requires_grad for p in params))
        for key, state in self.states.items():
            if key not in holdings and state.held is not None:
                holdings[key] = (state.held, state.trainable_held)
        held: set[int] = set().union(*(ids for ids, _ in holdings.values()))
        trainable_held = {key: count for key, (_, count) in holdings.items()}
        trained_models = {self.owner[key] for key in held if key in self.owner}
        outside = [key for key, reads in self.with_grad.items()
                   if reads >= OUTSIDE_READS and key not in held and self.owner.get(key) in trained_models]
        if not outside:
            return
        only_frozen = any(count == 0 for count in trainable_held.values())
        tail = ("; an optimizer holds only parameters with `requires_grad=False`: was it built over the frozen part "
                "of the model?") if only_frozen else (
                "; was the optimizer built before these layers were replaced or added, or over a part of the model?")
        self.ctx.evidence(
            self, code=None, at=self.first_site, runtime_code="TL744",
            message=f"{_count(outside)} get gradients but no optimizer holds them, so they never learn: {self._listed(outside)}{tail}",
            data={"parameters": [self._name(key) for key in outside]},
        )

    def _judge_stalls(self) -> None:
        for state in self.states.values():
            stalled: list[int] = []
            since: list[int] = []
            for key, reads in state.history.items():
                first = _stall_start(reads, state.moved_any)
                if first is not None:
                    stalled.append(key)
                    since.append(first)
            if stalled:
                first = min(since)
                last = max(step for reads in state.history.values() for step, _ in reads)
                self.ctx.evidence(
                    self, code=None, at=state.site, runtime_code="TL752",
                    message=(
                        f"{_count(stalled)} learned at first, then got no gradient or no update at every step read from "
                        f"step {first} to step {last}: {self._listed(stalled)}; ReLU units that died, a learning rate "
                        "that dropped to 0, or an update that stopped being applied"
                    ),
                    data={"parameters": [self._name(key) for key in stalled], "since": first, "until": last},
                )

    def _listed(self, keys: list[int]) -> str:
        return listed(self._name(key) for key in keys)

    def _name(self, key: int) -> str:
        return parameter_label(key, self.names, self.params)


def _stall_start(reads: list[tuple[int, str]], moved_any: set[int]) -> int | None:
    """The read step a parameter's stall began, or None when it did not stall: it learned at
    LEARNED_READS read steps at least, and at each of the last STALLED_READS it got an exactly
    zero gradient, or kept its value while the step moved no parameter at all. (One parameter
    kept while others move is its own gradient's scale: the bias of a layer feeding a
    BatchNorm gets the rounding error of a gradient that cancels.)"""
    learned = [step for step, what in reads if what == LEARNED]
    if len(learned) < LEARNED_READS or len(reads) < STALLED_READS + LEARNED_READS:
        return None
    tail = reads[-STALLED_READS:]
    if any(what == LEARNED or (what == KEPT and step in moved_any) for step, what in tail):
        return None
    return next(step for step, _ in reads if step > max(learned))


def _is_optimizer(value: Any) -> bool:
    """Whether ``value``, one of every object the collector holds, is an optimizer. Its type
    is read, not ``value.__class__``, which ``isinstance`` falls back to: a deprecated object
    (``torch.distributed.reduce_op``) warns when that is read, at the probe's line, in the
    program's output. A weakref.proxy to an optimizer is not one: its referent is in the list."""
    return issubclass(type(value), torch.optim.Optimizer)


def _held(optimizer: Any) -> list[torch.Tensor]:
    return [p for group in optimizer.param_groups for p in group["params"] if isinstance(p, torch.Tensor)]


def _readable(param: torch.Tensor) -> bool:
    return not (param.is_meta or param.is_sparse)


def _pairs(before: Any, after: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per tensor, its prefix before and after, from two `prefixes` results."""
    (old, lengths), (new, _) = before, after
    return list(zip(old.split(lengths), new.split(lengths)))


def _disarm(state: OptimizerState) -> None:
    for clearing in state.clearing.values():
        clearing.remove()
    state.clearing = {}


