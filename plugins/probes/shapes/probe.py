"""Shape-hazards probe: ops that run without error on a shape that makes their result constant.

* TL733 a softmax, log-softmax, argmax or argmin (or `max`/`min` over a `dim`, whose
  indices are an argmax) over a dimension of size 1, and a cross-entropy or NLL loss over a
  single class. `softmax(x, dim=1)` of an `[N, 1]` output is
  1 everywhere, `argmax(dim=1)` is 0 everywhere, and `cross_entropy` of one class is a loss
  of exactly 0: the model trains on nothing and nothing raises. The usual cause is a binary
  classifier with one output unit fed to a multi-class head (use `sigmoid` and
  `BCEWithLogitsLoss`, or two output units).

Reported once per user line, at the line that called the op, with the shape it got. A
softmax or arg-reduction is judged when the run ends, and only where that dimension had size 1
at every call of the line: a layer's one output unit stays one, while an attention's key axis
that is 1 at the first token of generation (minGPT's `softmax(att, dim=-1)` on a one-token
prompt) grows with the sequence and is no hazard.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from torchlint.probe import Probe, op_name

Tensor = torch.Tensor

NORMALIZERS = {
    F.softmax, torch.softmax, Tensor.softmax, torch.special.softmax,
    F.log_softmax, torch.log_softmax, Tensor.log_softmax, torch.special.log_softmax,
}
ARG_REDUCTIONS = {torch.argmax, Tensor.argmax, torch.argmin, Tensor.argmin}
#: `max`/`min` over a dimension return (values, indices): the indices are an argmax/argmin.
#: Without an int `dim` they are a reduction of all elements, or elementwise of two tensors.
INDEXED_REDUCTIONS = {torch.max, Tensor.max, torch.min, Tensor.min}
#: Losses whose input's dimension 1 holds the classes.
CLASS_LOSSES = {F.cross_entropy, F.nll_loss}
#: Calls of a line with a size-1 dimension, and none wider, after which it is reported without
#: waiting for the end of the run (which a timeout never reaches).
NARROW_CALLS = 3


class ShapesProbe(Probe):
    name = "shapes"
    order = 50
    runtime_code = "TL733"
    summary = "softmax/argmax over a dimension of size 1, a cross-entropy over one class"

    def install(self) -> None:
        self.reported: set[tuple[str, int]] = set()
        #: Per user line: the first call whose dimension had size 1 (site, func, shape, dim,
        #: consequence), and how many calls had it.
        self.narrow: dict[tuple[str, int], tuple] = {}
        self.narrow_calls: dict[tuple[str, int], int] = {}
        #: User lines whose dimension had a size above 1 at some call: no constant result there.
        self.wide: set[tuple[str, int]] = set()

    def uninstall(self) -> None:
        for key, found in self.narrow.items():
            if key not in self.wide:
                self._report(*found)

    def watches(self, func: Any) -> bool:
        return func in NORMALIZERS or func in ARG_REDUCTIONS or func in INDEXED_REDUCTIONS or func in CLASS_LOSSES

    def before(self, func: Any, args: tuple, kwargs: dict) -> None:
        tensor = args[0] if args else kwargs.get("input")
        if not isinstance(tensor, Tensor) or tensor.dim() == 0:
            return
        if func in CLASS_LOSSES:
            if tensor.dim() >= 2 and tensor.shape[1] == 1:
                self._report(self.ctx.site(), func, tuple(tensor.shape), 1,
                             "the loss is exactly 0 for every sample: there is one class to choose from")
            return
        dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
        if not isinstance(dim, int) or not -tensor.dim() <= dim < tensor.dim():
            return  # softmax without dim is TL713's; argmax without dim flattens
        site = self.ctx.site()
        key = (site.path, site.line) if site else ("", 0)
        if tensor.shape[dim] != 1:
            self.wide.add(key)
        elif tensor.numel() > 1 and key not in self.reported:
            if key not in self.narrow:
                if func in INDEXED_REDUCTIONS:
                    what = "indices are 0 everywhere (and its values are its input)"
                elif func in ARG_REDUCTIONS:
                    what = "result is 0 everywhere"
                else:
                    what = "result is 1 everywhere" if "log" not in op_name(func) else "result is 0 everywhere"
                self.narrow[key] = (site, func, tuple(tensor.shape), dim, f"its {what}")
            calls = self.narrow_calls[key] = self.narrow_calls.get(key, 0) + 1
            if calls >= NARROW_CALLS and key not in self.wide:
                self._report(*self.narrow[key])

    def _report(self, site: Any, func: Any, shape: tuple, dim: int, consequence: str) -> None:
        key = (site.path, site.line) if site else ("", 0)
        if key in self.reported:
            return
        self.reported.add(key)
        self.ctx.evidence(
            self,
            code=None,
            at=site,
            message=(
                f"`{op_name(func)}` over dimension {dim} of a tensor of shape {shape}, which has size 1 there: "
                f"{consequence}; one output unit needs `sigmoid`/`BCEWithLogitsLoss`, or give the layer two outputs"
            ),
            data={"op": op_name(func), "shape": list(shape), "dim": dim},
        )


PROBE = ShapesProbe
