"""Gradient-flow probe: the training bugs that never raise, read at the first optimizer steps.

* TL730 a trainable parameter the optimizer holds that gets no gradient at any of the first
  steps (``.grad`` stays None, or is all zeros): a layer built but never used in ``forward``,
  a path cut by ``.detach()``/``.item()``/``torch.tensor(x)``, or ``zero_grad()`` called
  between ``backward()`` and ``step()``. Named by its path in the model (``Net.head.weight``).
  A bias whose gradient cancels over the batch while its layer's weight gets one (a WGAN
  critic's last bias) is arithmetic, not a flow problem, and is not counted.
* TL731 parameters that have a gradient but do not change when the optimizer steps (a
  learning rate of 0, a param group frozen by hand).
* TL732 a loss whose value is exactly the same at every one of the first steps: nothing the
  optimizer does reaches it.
* TL742 layers whose gradient, relative to their weights, is a millionth or less of the
  layer that learns fastest, at every one of the first steps: the gradient vanishes on its way
  back (saturating activations stacked deep, a missing normalisation or residual path).
* TL743 a gradient norm that grows tenfold or more from each step to the next: the updates
  explode (a learning rate too high for the scale of the inputs or targets).

The probe watches the first ``STEPS`` optimizer steps only (torch's global optimizer step
hooks; nothing is hooked per op), so its cost does not grow with the run. Parameters are
named through the models in reach of the line that steps (locals of the user's frames and the
attributes of ``self``), the way the errors probe names them.
"""

from __future__ import annotations

import sys
import weakref
from typing import Any

import torch
from torch import nn
from torch.optim import optimizer as optimizer_hooks

from torchlint.probe import (
    SHOWN, Probe, by_device as _by_device, counted, kept as _kept, listed, models_in_reach,
    norms as _norms, parameter_label, parameter_names, prefixes as _prefixes, step_closure,
)

#: Steps read before judging. Three: one step can legitimately skip a parameter (a branch
#: taken at random, a warm-up), three in a row rarely do.
STEPS = 3
#: A layer's |grad| / |weight| at or below this share of the largest layer's, at every step
#: read, is vanishing. Healthy models measured: a ResNet-style CNN spans 1e-3 (BatchNorm vs
#: the first conv), a transformer's layers 1e-3; 12 stacked sigmoids give 1e-11.
VANISHED = 1e-6
#: Layers that must starve together: a gradient vanishes on its way back through several.
VANISHED_LAYERS = 2
#: Growth of the total gradient norm, from each step to the next, that is an explosion.
EXPLODING = 10.0
#: Layers whose gradient is sparse by design (the rows of the tokens in the batch): their
#: relative gradient is small in any healthy model and says nothing about the flow.
SPARSE_GRADIENT_LAYERS = (nn.Embedding, nn.EmbeddingBag)


class GradientFlowProbe(Probe):
    name = "gradient-flow"
    order = 50
    runtime_code = "TL730"
    summary = "parameters without gradients, parameters the optimizer does not change, a loss that never moves"

    def install(self) -> None:
        self.steps: dict[int, int] = {}  # id(optimizer) -> steps seen
        self.without_grad: dict[int, int] = {}  # id(param) -> steps it had no (or a zero) gradient
        self.zero_only: dict[int, bool] = {}  # id(param) -> every missing gradient was all zeros
        self.unchanged: dict[int, int] = {}  # id(param) -> steps it had a gradient and kept its value
        #: Per device, between the hooks of one step: (parameters, their prefixes, their gradients' prefixes).
        self.before_step: list[tuple[list, tuple, tuple]] = []
        self.params: dict[int, weakref.ref] = {}
        self.names: dict[int, str] = {}
        self.step_site = None
        self.losses: list[float] = []
        self.loss_site = None
        #: id(param) -> the path of the layer that owns it (`Net.encoder.0`); not for sparse-gradient layers.
        self.layers: dict[int, str] = {}
        #: Per step read: layer -> (sum of squared gradients, sum of squared weights).
        self.layer_norms: list[dict[str, list[float]]] = []
        self.total_norms: list[float] = []
        self.judged = False
        self.handles = [
            optimizer_hooks.register_optimizer_step_pre_hook(self.guarded(self._before_step)),
            optimizer_hooks.register_optimizer_step_post_hook(self.guarded(self._after_step)),
        ]

    def uninstall(self) -> None:
        for handle in self.handles:
            handle.remove()
        self._judge()

    # -- the loss ----------------------------------------------------------------------------
    def watches(self, func: Any) -> bool:
        return func is torch.Tensor.backward

    def before(self, func: Any, args: tuple, kwargs: dict) -> None:
        loss = args[0] if args else None
        if len(self.losses) >= STEPS or not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            return
        if not self.ctx.device.computes_values or loss.is_meta:
            return
        # Out of every mode: the probe's own read of the value is no host sync of the program.
        with torch._C.DisableTorchFunction(), torch.no_grad():
            self.losses.append(float(loss.detach().float()))
        if self.loss_site is None:
            self.loss_site = self.ctx.site()

    # -- the steps ---------------------------------------------------------------------------
    def _before_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        seen = self.steps.get(id(optimizer), 0)
        if seen >= STEPS:
            return
        if self.step_site is None:
            self.step_site = self.ctx.site()
            self._name_parameters()
        if step_closure(args, kwargs):
            return  # step(closure) makes its gradients inside the step (LBFGS): read after it
        self._read_gradients(optimizer)

    def _read_gradients(self, optimizer: Any, moves: bool = True) -> None:
        """This step's gradients: which parameters have none or a zero one, the layers' norms;
        with ``moves``, what the step is about to change (compared after it)."""
        params = _trainable(optimizer)
        for param in params:
            self.params.setdefault(id(param), weakref.ref(param))
        with_grad = [p for p in params if p.grad is not None]
        for param in params:
            if param.grad is None:
                self.without_grad[id(param)] = self.without_grad.get(id(param), 0) + 1
                self.zero_only[id(param)] = False
        if not self.ctx.device.computes_values:
            return
        # One fused norm per device for all gradients, and for all parameters: the probe must
        # not show up in a profile of the step line.
        with torch._C.DisableTorchFunction(), torch.no_grad():
            grad_norms = _norms([p.grad for p in with_grad])
            flowing = {self.layers.get(id(p)) for p, norm in zip(with_grad, grad_norms) if norm != 0.0}
            for param, norm in zip(with_grad, grad_norms):
                if norm == 0.0 and not self._cancelled(param, flowing):
                    self.without_grad[id(param)] = self.without_grad.get(id(param), 0) + 1
                    self.zero_only[id(param)] = self.zero_only.get(id(param), True)
            self._note_layers(with_grad, grad_norms)
            if not moves:
                return
            moving = [p for p, norm in zip(with_grad, grad_norms) if norm != 0.0]
            groups = ([moving[i] for i in indices] for indices in _by_device(moving).values())
            self.before_step = [(group, _prefixes(group), _prefixes([p.grad for p in group])) for group in groups]

    def _after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        seen = self.steps.get(id(optimizer), 0)
        if seen >= STEPS:
            return
        if step_closure(args, kwargs):
            # The gradients the closure made last; what the step changed is not known (the
            # weights were not read before it), so it counts for no unchanged parameter.
            self._read_gradients(optimizer, moves=False)
        self.steps[id(optimizer)] = seen + 1
        with torch._C.DisableTorchFunction(), torch.no_grad():
            for group, before, grads in self.before_step:
                for param, kept in zip(group, _kept(before, _prefixes(group), grads)):
                    if kept:
                        self.unchanged[id(param)] = self.unchanged.get(id(param), 0) + 1
        self.before_step = []
        if seen + 1 == STEPS:
            self._judge()  # judged now: the run may be stopped (--steps) or die later

    def _note_layers(self, params: list[torch.Tensor], grad_norms: list[float]) -> None:
        """Per layer, this step's squared gradient and weight norms; the total gradient norm."""
        weight_norms = _norms(params)
        layers: dict[str, list[float]] = {}
        for param, grad_norm, weight_norm in zip(params, grad_norms, weight_norms):
            layer = self.layers.get(id(param))
            if layer is not None and grad_norm == grad_norm and weight_norm == weight_norm:  # not NaN
                sums = layers.setdefault(layer, [0.0, 0.0])
                sums[0] += grad_norm ** 2
                sums[1] += weight_norm ** 2
        self.layer_norms.append(layers)
        self.total_norms.append(sum(norm ** 2 for norm in grad_norms if norm == norm) ** 0.5)

    def _cancelled(self, param: torch.Tensor, flowing: set[str | None]) -> bool:
        """A bias with an all-zero gradient while a weight of its own layer gets one: the
        gradient reaches the layer, and the bias's (the sum of the layer's output gradients
        over the batch) cancels because the loss does not change when that output shifts by
        a constant: a WGAN critic's last bias under `-mean(real) + mean(fake)`. Arithmetic,
        not a flow problem, so not counted."""
        layer = self.layers.get(id(param))
        return layer is not None and layer in flowing and "bias" in self.names.get(id(param), "").rsplit(".", 1)[-1]

    # -- findings ----------------------------------------------------------------------------
    def _judge(self) -> None:
        if self.judged or not self.steps:
            return
        self.judged = True
        steps = max(self.steps.values())
        never = [key for key, count in self.without_grad.items() if count >= steps]
        if never:
            zeros = all(self.zero_only.get(key) for key in never)
            what = "an all-zero gradient" if zeros else "no gradient"
            self.ctx.evidence(
                self,
                code=None,
                at=self.step_site,
                runtime_code="TL730",
                message=(
                    f"{self._count(never)} the optimizer updates got {what} at each of the first {_steps(steps)}: "
                    f"{self._listed(never)}; a layer not used in `forward`, a graph cut by `.detach()`/`.item()`/"
                    f"`torch.tensor(...)`, or `zero_grad()` between `backward()` and `step()`"
                ),
                data={"parameters": [self._name(key) for key in never], "steps": steps},
            )
        vanished = self._judge_flow()
        # A gradient a millionth of the others' moves no float32 weight: TL742 says why.
        frozen = [key for key, count in self.unchanged.items() if count >= steps and self.layers.get(key) not in vanished]
        if frozen:
            self.ctx.evidence(
                self,
                code=None,
                at=self.step_site,
                runtime_code="TL731",
                message=(
                    f"{self._count(frozen)} had a gradient but kept their values through the first {_steps(steps)}: "
                    f"{self._listed(frozen)}; is the learning rate 0, or their param group frozen?"
                ),
                data={"parameters": [self._name(key) for key in frozen], "steps": steps},
            )
        if len(self.losses) >= STEPS and len(set(self.losses)) == 1 and steps >= STEPS:
            self.ctx.evidence(
                self,
                code=None,
                at=self.loss_site,
                runtime_code="TL732",
                message=(
                    f"the loss is exactly {self.losses[0]:g} at each of the first {_steps(len(self.losses))}: "
                    "the optimizer's updates never reach it (parameters without gradients, a learning rate of 0, "
                    "or a loss that does not depend on the model)"
                ),
                data={"losses": self.losses},
            )

    def _judge_flow(self) -> set[str]:
        """TL742 and TL743; returns the layers the gradient does not reach."""
        vanished: list[str] = []
        if len(self.layer_norms) >= 2:
            ratios = [{layer: (g / w) ** 0.5 for layer, (g, w) in norms.items() if w > 0 and g > 0} for norms in self.layer_norms]
            tops = [max(step.items(), key=lambda item: item[1]) if step else None for step in ratios]
            if all(tops):
                vanished = sorted((layer for layer in ratios[0]
                                   if all(layer in step and step[layer] <= VANISHED * top[1] for step, top in zip(ratios, tops))),
                                  key=lambda layer: ratios[-1][layer])
                if len(vanished) < VANISHED_LAYERS:
                    vanished = []  # one starved parameter is its scale (a big free tensor), not a gradient dying with depth
                if vanished:
                    top_layer, top_ratio = tops[-1]
                    shown = ", ".join(f"`{layer}` ({ratios[-1][layer] / top_ratio:.0e})" for layer in vanished[:SHOWN])
                    more = f" and {len(vanished) - SHOWN} more" if len(vanished) > SHOWN else ""
                    self.ctx.evidence(
                        self, code=None, at=self.step_site, runtime_code="TL742",
                        message=(
                            f"the gradient vanishes before it reaches {len(vanished)} layer{'s' * (len(vanished) != 1)}: "
                            f"relative to its weights, each gets a millionth or less of what `{top_layer}` gets, at each of "
                            f"the first {_steps(len(ratios))}: {shown}{more}; saturating activations stacked deep, or a "
                            "missing normalisation or residual connection"
                        ),
                        data={"layers": {layer: ratios[-1][layer] / top_ratio for layer in vanished}, "reference": top_layer},
                    )
        norms = self.total_norms
        if len(norms) >= STEPS and all(0 < before and after >= EXPLODING * before for before, after in zip(norms, norms[1:])):
            self.ctx.evidence(
                self, code=None, at=self.step_site, runtime_code="TL743",
                message=(
                    f"the gradient norm grows tenfold or more at every step: {', '.join(f'{n:.3g}' for n in norms)} over the "
                    f"first {_steps(len(norms))}; the updates explode: lower the learning rate, normalise the inputs "
                    "and targets, or clip the gradients"
                ),
                data={"gradient_norms": norms},
            )
        return set(vanished)

    def _count(self, keys: list[int]) -> str:
        return counted(keys)

    def _listed(self, keys: list[int]) -> str:
        return listed(self._name(key) for key in keys)

    def _name(self, key: int) -> str:
        return parameter_label(key, self.names, self.params)

    def _name_parameters(self) -> None:
        """Path names for the parameters of the models in reach of the stepping line."""
        roots = models_in_reach(self.ctx.frames, sys._getframe(1))
        self.names.update((key, name) for key, name in parameter_names(roots).items() if key not in self.names)
        for label, module in roots:
            for path, layer in module.named_modules():
                if isinstance(layer, SPARSE_GRADIENT_LAYERS):
                    continue
                for param in layer.parameters(recurse=False):
                    self.layers.setdefault(id(param), f"{label}.{path}" if path else label)


def _trainable(optimizer: Any) -> list[torch.Tensor]:
    return [p for group in optimizer.param_groups for p in group["params"] if isinstance(p, torch.Tensor) and p.requires_grad]


def _steps(count: int) -> str:
    return "step" if count == 1 else f"{count} steps"


PROBE = GradientFlowProbe
