from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Optional

import libcst as cst

from torchlint.rule import Bad, Good
from torchlint.static.names import dotted_name

from ._probability_flow import (
    SOFTMAX_FUNCTIONS,
    SOFTMAX_MODULES,
    Origin,
    Prob,
    ProbabilityFlow,
    ProbabilityFlowRule,
    ProbModule,
    Value,
)

if TYPE_CHECKING:
    from torchlint.findings import Finding
    from torchlint.static.context import ProjectContext

SIGMOID_FUNCTIONS = frozenset(
    {"torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit", "torch.Tensor.sigmoid"}
)
SIGMOID_MODULES = frozenset(
    {"torch.nn.Sigmoid", "torch.nn.modules.Sigmoid", "torch.nn.modules.activation.Sigmoid"}
)


class SigmoidFlow(ProbabilityFlow):
    """The probability dataflow with sigmoid as the source: TL106's question is the same as
    TL101's, with `BCELoss` for the loss and sigmoid for the softmax."""

    def _evaluate_qualified_call(self, call: cst.Call, qualname: str) -> Optional[Value]:
        if qualname in SIGMOID_FUNCTIONS:
            return Prob(self._origin(call, call.func))
        if qualname in SIGMOID_MODULES:
            return ProbModule(self._origin(call, call.func))
        if qualname in SOFTMAX_FUNCTIONS or qualname in SOFTMAX_MODULES:
            return None  # softmax probabilities are what BCELoss expects
        return super()._evaluate_qualified_call(call, qualname)

    def method_softmax(self, call: cst.Call, receiver: cst.BaseExpression) -> Optional[Value]:
        return None

    def _evaluate_call(self, call: cst.Call) -> Optional[Value]:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "sigmoid" and not call.args:
            if self.ctx.qualname(func) is None and not self._is_self_or_module(func.value):
                return Prob(self._origin(call, func))
        return super()._evaluate_call(call)

    def _is_self_or_module(self, receiver: cst.BaseExpression) -> bool:
        """`self.sigmoid()` is the module's own attribute; `lib.sigmoid()` another library's."""
        if isinstance(receiver, cst.Name):
            method = self._method_class()
            if method is not None and receiver.value == method[1]:
                return True
            if receiver.value in self.ctx.aliases.relative_imports:
                return True
        head = dotted_name(receiver)
        return head is not None and self.ctx.aliases.resolve(head) is not None


class SigmoidBeforeBCELoss(ProbabilityFlowRule):
    """
    ## What it does
    Flags `nn.BCELoss` / `F.binary_cross_entropy` calls whose INPUT (first argument) is sigmoid
    output: from `torch.sigmoid`, `F.sigmoid`, `torch.special.expit`, `x.sigmoid()`, an
    `nn.Sigmoid` module (inline, in a variable or `self.<attr>`), an `nn.Sequential` ending in
    one, or a model whose `forward` returns one of those on every path (also from another file
    of the project). The values are followed through local variables and view, reshape,
    squeeze, indexing, `.float()`, `.to()`-like operations, as TL101 follows softmax.

    ## Why is this bad?
    `BCELoss` takes probabilities and computes `log(p)` and `log(1 - p)` itself. After a
    sigmoid in float32, `p` is exactly `1.0` for logits above about 17, so `log(1 - p)` is
    `-inf`; BCELoss clamps it to `-100` and the gradient is exactly zero. A confidently wrong
    prediction then stops learning: for logit 20 and target 0, `BCELoss(sigmoid(z))` gives loss
    100 and gradient 0, while `BCEWithLogitsLoss(z)` gives the true loss 20 and gradient 1.
    `BCEWithLogitsLoss` fuses the two with the log-sum-exp trick and is stable everywhere.
    Under CUDA autocast (mixed precision) `binary_cross_entropy` refuses to run at all
    ("torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast").

    Only the input matters. Probabilities from elsewhere (a softmax column, a clamp, a model
    this file cannot see) are not flagged: BCELoss is the right loss for them.

    ## Example
    ```python
    loss = nn.BCELoss()(torch.sigmoid(model(x)), y)
    ```

    ## Use instead
    ```python
    loss = nn.BCEWithLogitsLoss()(model(x), y)
    ```

    ## Known limitations
    Values are followed within one function (plus module-level variables and `self.<attr>`
    modules); a sigmoid assigned in a branch does not count after it. A model returning sigmoid
    output is recognised when its class is defined in the file or imported by name from it.
    """

    code = "TL106"
    name = "sigmoid-before-bce-loss"
    summary = "`BCELoss` on sigmoid output is unstable and kills gradients; use `BCEWithLogitsLoss` on logits"
    triggers = ("binary_cross_entropy", "BCELoss", "sigmoid", "Sigmoid", "expit")
    analyses = (SigmoidFlow,)
    loss_kind = "bce"
    loss_label_functional = "binary_cross_entropy"
    loss_label_module = "BCELoss"

    @classmethod
    def message(cls, loss_label: str, where: str) -> str:
        fused = "binary_cross_entropy_with_logits" if loss_label == "binary_cross_entropy" else "BCEWithLogitsLoss"
        return (
            f"{loss_label} takes probabilities and saturates on sigmoid output ({where}): "
            f"pass the logits to `{fused}`"
        )

    cases = [
        Bad(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn

            criterion = nn.BCELoss()

            def step(model, x, y):
                p = torch.sigmoid(model(x)).squeeze(1)
                a = criterion(p, y)  # error
                b = F.binary_cross_entropy(model(x).sigmoid(), y)  # error
                return a + b
            """,
            note="a module-level criterion; a variable through squeeze; the method form",
        ),
        Bad(
            """
            import torch
            from torch import nn

            class Discriminator(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.main = nn.Sequential(nn.Linear(10, 1), nn.Sigmoid())

                def forward(self, x):
                    return self.main(x).view(-1)

            class GAN:
                def __init__(self):
                    self.netD = Discriminator()
                    self.loss = nn.BCELoss()

                def d_step(self, real, label):
                    out = self.netD(real)
                    return self.loss(out, label)  # error
            """,
            note="a Sequential ending in nn.Sigmoid inside the model (DCGAN's pattern)",
        ),
        Bad(
            files={
                "models.py": """
                    import torch
                    from torch import nn

                    class Head(nn.Module):
                        def forward(self, x):
                            return torch.sigmoid(x)
                """,
                "train.py": """
                    import torch.nn.functional as F
                    from models import Head

                    head = Head()
                    loss = F.binary_cross_entropy(head(feats), y)  # error
                """,
            },
            note="across files",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn

            def f(logits, y, model, x):
                probs = F.softmax(logits, dim=1)[:, 1]
                a = F.binary_cross_entropy(probs, y)
                b = nn.BCELoss()(torch.sigmoid(logits).clamp(1e-6, 1 - 1e-6), y)
                c = F.binary_cross_entropy(model(x), y)
                return a + b + c
            """,
            note="a softmax column, a clamp, a model this file cannot see",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F

            def f(logits, y, training):
                out = logits
                if not training:
                    out = torch.sigmoid(out)
                return F.binary_cross_entropy_with_logits(logits, y), F.binary_cross_entropy(out, y)
            """,
            note="sigmoid only in a branch that does not enclose the use",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F

            def f(logits, y):
                target = torch.sigmoid(y)
                return F.binary_cross_entropy(torch.rand_like(target), target)
            """,
            note="sigmoid output as the TARGET is fine",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F

            def f(logits, y):
                p = torch.sigmoid(logits)
                p = p * 0.9 + 0.05
                return F.binary_cross_entropy(p, y)
            """,
            note="re-assigned with something else",
        ),
    ]

    def _where(self, origin: Origin) -> str:
        line = self._line(origin.node)
        if origin.via:
            return f"`{origin.via}.forward` returns sigmoid output: {origin.text} at line {line}"
        return f"from {origin.text} at line {line}"

    @classmethod
    def project_check(cls, project: ProjectContext) -> list[Finding]:
        # The shared cross-file join words its message for softmax.
        return [
            dataclasses.replace(f, message=f.message.replace("returns softmax output", "returns sigmoid output"))
            for f in super().project_check(project)
        ]
