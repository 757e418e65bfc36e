"""Loss probe: confirms TL101 (softmax into cross_entropy) and TL102 (into nll_loss).

Tensors produced by softmax (``F.softmax``, ``torch.softmax``, ``Tensor.softmax``, and so
``nn.Softmax`` and a model whose forward ends in one) are tagged; the tag follows views,
reshapes, indexing, ``.to`` and friends but not ``log``, so ``log(softmax(x))`` into
``nll_loss`` is fine. ``nn.CrossEntropyLoss``/``nn.NLLLoss`` call the functional losses, so
watching those two functions covers the modules. A tagged input is backed by a value check
(rows in [0, 1] summing to 1) when the device mode computes values.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
import torch.nn.functional as F

from torchlint.probe import Probe, Site, op_name

Tensor = torch.Tensor

SOFTMAX = {F.softmax, torch.softmax, Tensor.softmax, torch.special.softmax}
PRESERVES_VALUES = {
    Tensor.view, Tensor.view_as, Tensor.reshape, Tensor.reshape_as, Tensor.flatten, torch.flatten, torch.reshape,
    Tensor.squeeze, torch.squeeze, Tensor.unsqueeze, torch.unsqueeze, Tensor.permute, torch.permute,
    Tensor.transpose, torch.transpose, Tensor.t, Tensor.contiguous, Tensor.to, Tensor.float, Tensor.double,
    Tensor.half, Tensor.bfloat16, Tensor.cpu, Tensor.cuda, Tensor.__getitem__, Tensor.clone, torch.clone,
    Tensor.detach, Tensor.narrow, Tensor.select, Tensor.expand, Tensor.expand_as, Tensor.type_as,
}
LOSSES = {F.cross_entropy: "TL101", F.nll_loss: "TL102"}


class LossProbe(Probe):
    name = "loss"
    order = 20
    confirms = ("TL101", "TL102")
    runtime_code = "TL704"
    summary = "softmax output reaching cross_entropy / nll_loss"

    def install(self) -> None:
        self.tags: dict[int, tuple[weakref.ref, Site | None, str]] = {}

    def watches(self, func: Any) -> bool:
        return func in SOFTMAX or func in PRESERVES_VALUES or func in LOSSES

    def before(self, func: Any, args: tuple, kwargs: dict) -> None:
        code = LOSSES.get(func)
        if code is None:
            return
        site = self.ctx.site()
        self.ctx.observed(self, code, site, "its input was not softmax output")
        tensor = args[0] if args else kwargs.get("input")
        tag = self._tag_of(tensor)
        if tag is None:
            return
        softmax_site, how = tag
        values = self._value_check(tensor)
        loss = op_name(func)
        where = f" at {site.short()}" if site else ""
        source = f" at {softmax_site.short()}" if softmax_site else ""
        expects = "logits (it applies log_softmax itself)" if code == "TL101" else "log-probabilities"
        self.ctx.evidence(
            self,
            code=code,
            at=site,
            sites=[site, softmax_site],
            message=f"`{loss}`{where} received the output of {how}{source}; it expects {expects}; {values}",
            data={"loss": loss, "softmax_at": [softmax_site.path, softmax_site.line] if softmax_site else None, "values": values},
        )

    def after(self, func: Any, args: tuple, kwargs: dict, result: Any) -> None:
        if not isinstance(result, Tensor):
            return
        if func in SOFTMAX:
            self._tag(result, self.ctx.site(), f"`{op_name(func)}`")
        elif self.tags and func in PRESERVES_VALUES and args:
            tag = self._tag_of(args[0])
            if tag is not None:
                self._tag(result, *tag)

    def _tag(self, tensor: Tensor, site: Site | None, how: str) -> None:
        key = id(tensor)
        tags = self.tags
        tags[key] = (weakref.ref(tensor, lambda _ref, key=key: tags.pop(key, None)), site, how)

    def _tag_of(self, tensor: Any) -> tuple[Site | None, str] | None:
        entry = self.tags.get(id(tensor))
        if entry is None or entry[0]() is not tensor:
            return None
        return entry[1], entry[2]

    def _value_check(self, tensor: Tensor) -> str:
        if not self.ctx.device.computes_values or tensor.is_meta:
            return f"values are not computed under {self.ctx.device.name}"
        with torch.no_grad():
            values = tensor.detach().float()
            dim = 1 if values.dim() > 1 else 0
            in_range = bool(values.min() >= -1e-4) and bool(values.max() <= 1 + 1e-4)
            sums_to_one = bool(torch.allclose(values.sum(dim), torch.ones((), device=values.device), atol=1e-3))
        if in_range and sums_to_one:
            return f"checked: values in [0, 1], each row summing to 1 (over dim {dim})"
        return f"values are not rows summing to 1 over dim {dim} (softmax over another dimension?)"


PROBE = LossProbe
