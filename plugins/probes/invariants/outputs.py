"""A model whose output no longer depends on its input (TL753), read at the loss.

At each call of a loss function in the watched steps, the prediction (the loss's first
argument) is compared across the samples of the batch: when every sample gets the same output
(to a relative 1e-4, where a healthy model's outputs differ by their own size) while the
targets differ, the model predicts a constant. Stacked sigmoids that saturate do this (the
loss sits on a plateau, flat but not exactly constant), and so do ReLU layers that all died.
Reported at the loss line once three calls in a row saw it: a zero-initialised head is
constant at the first step only.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from torchlint.probe import Probe

#: Losses whose first argument is a batch of predictions, one row per sample.
LOSSES = {
    F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss, F.binary_cross_entropy, F.binary_cross_entropy_with_logits,
    F.cross_entropy, F.nll_loss, F.kl_div,
}
#: Spread of the outputs across the batch, relative to their size, at or below which they are
#: one constant. Measured: 12 stacked sigmoids 1e-6; a freshly initialised MLP 1.
CONSTANT = 1e-4
#: Loss calls in a row that must see it.
CALLS = 3


class ConstantOutputProbe(Probe):
    name = "constant-output"
    order = 59
    runtime_code = "TL753"
    summary = "a model whose output is the same for every sample while the targets differ"

    def install(self) -> None:
        self.streak: dict[tuple[str, int], int] = {}
        self.spreads: dict[tuple[str, int], list[float]] = {}
        self.reported: set[tuple[str, int]] = set()

    def watches(self, func: Any) -> bool:
        return func in LOSSES

    def before(self, func: Any, args: tuple, kwargs: dict) -> None:
        prediction = args[0] if args else kwargs.get("input")
        target = args[1] if len(args) > 1 else kwargs.get("target")
        if not isinstance(prediction, torch.Tensor) or not isinstance(target, torch.Tensor):
            return
        if prediction.dim() == 0 or prediction.shape[0] < 2 or not self.ctx.device.computes_values or prediction.is_meta:
            return
        site = self.ctx.site()
        if site is None:
            return
        key = (site.path, site.line)
        if key in self.reported:
            return
        with torch._C.DisableTorchFunction(), torch.no_grad():
            spread = _relative_spread(prediction)
            constant = spread is not None and spread <= CONSTANT and _varies(target)
        if not constant:
            self.streak[key] = 0
            self.spreads.pop(key, None)
            return
        self.streak[key] = self.streak.get(key, 0) + 1
        self.spreads.setdefault(key, []).append(spread)
        if self.streak[key] >= CALLS:
            self.reported.add(key)
            worst = max(self.spreads[key])
            self.ctx.evidence(
                self, code=None, at=site, runtime_code="TL753",
                message=(
                    f"the model's output is the same for every sample of the batch at {CALLS} `{func.__name__}` calls in a "
                    f"row (it differs by {worst:.0e} of its size across {prediction.shape[0]} samples) while the targets "
                    "differ: the model predicts a constant and the loss sits on a plateau; saturated activations (stacked "
                    "sigmoid/tanh), ReLU layers that all died, or an input that does not reach the output"
                ),
                data={"spreads": self.spreads[key], "batch": int(prediction.shape[0])},
            )


def _relative_spread(prediction: torch.Tensor) -> float | None:
    """max over features of (max - min over the batch), relative to the outputs' size."""
    values = prediction.detach()
    if not values.is_floating_point():
        return None
    values = values.reshape(values.shape[0], -1).double()
    size = float(values.abs().max())
    if size == 0.0 or size != size:
        return None  # all zeros (a zero-initialised head) or NaN: other findings' business
    return float((values.amax(0) - values.amin(0)).max()) / size


def _varies(target: torch.Tensor) -> bool:
    flat = target.detach().reshape(-1)
    return flat.numel() > 1 and bool((flat != flat[0]).any())
