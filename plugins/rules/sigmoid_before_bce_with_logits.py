from __future__ import annotations

import libcst as cst

from torchlint.rule import Bad, Good, Rule
from torchlint.semantic.model import SemanticModel
from torchlint.semantic.values import SIGMOID, NNModule, Tensor

#: The fused loss, which applies the sigmoid itself.
_MODULES = frozenset({"torch.nn.BCEWithLogitsLoss", "torch.nn.modules.loss.BCEWithLogitsLoss"})
_FUNCTIONS = frozenset({"torch.nn.functional.binary_cross_entropy_with_logits"})


class SigmoidBeforeBCEWithLogits(Rule):
    """
    ## What it does
    Flags `nn.BCEWithLogitsLoss` / `F.binary_cross_entropy_with_logits` calls whose INPUT
    (first argument) is sigmoid output: from `torch.sigmoid`, `F.sigmoid`, `x.sigmoid()`, an
    `nn.Sigmoid` module or an `nn.Sequential` ending in one, or a model of this file whose
    `forward` returns one of those. Values are followed through local variables, views and
    casts by the engine's semantic model, as TL106 follows them into `BCELoss`.

    ## Why is this bad?
    `BCEWithLogitsLoss` applies the sigmoid itself. Given probabilities it applies a second
    one: every prediction is squashed into `[0.5, 0.73]`, the loss cannot go below about
    0.31 for a positive target or 0.69 for a negative one, and the gradient reaching the model
    is multiplied by the first sigmoid's derivative (at most 0.25). Training runs without an
    error and converges to a much worse model.

    Only values this file shows to be sigmoid output are flagged (the model's `forward` in
    another file is not followed by this rule).

    ## Example
    ```python
    criterion = nn.BCEWithLogitsLoss()
    loss = criterion(torch.sigmoid(model(x)), y)
    ```

    ## Use instead
    ```python
    criterion = nn.BCEWithLogitsLoss()
    loss = criterion(model(x), y)
    ```
    """

    code = "TL109"
    name = "sigmoid-before-bce-with-logits"
    summary = "`BCEWithLogitsLoss` applies sigmoid itself; feeding it sigmoid output applies it twice"
    triggers = ("BCEWithLogitsLoss", "binary_cross_entropy_with_logits")
    analyses = (SemanticModel,)
    cases = [
        Bad(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F

            def train(model, loader):
                criterion = nn.BCEWithLogitsLoss()
                for x, y in loader:
                    probs = torch.sigmoid(model(x))
                    loss = criterion(probs, y)  # error
                    aux = F.binary_cross_entropy_with_logits(model(x).sigmoid().squeeze(1), y)  # error
            """
        ),
        Bad(
            """
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.body = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())
                    self.criterion = nn.BCEWithLogitsLoss()

                def forward(self, x):
                    return self.body(x)

                def training_step(self, x, y):
                    return self.criterion(self(x), y)  # error
            """,
            note="a model whose forward ends in nn.Sigmoid, through self(x)",
        ),
        Good(
            """
            import torch
            import torch.nn as nn

            def train(model, loader):
                criterion = nn.BCEWithLogitsLoss()
                bce = nn.BCELoss()
                for x, y in loader:
                    logits = model(x)
                    loss = criterion(logits, y)
                    probs = torch.sigmoid(logits)
                    accuracy = ((probs > 0.5) == y).float().mean()
                    calibration = bce(probs, y)
            """,
            note="logits into the fused loss; sigmoid output only for metrics and a plain BCELoss",
        ),
        Good(
            """
            import torch.nn.functional as F

            def distill(student, teacher, x):
                soft = teacher(x).sigmoid()
                return F.binary_cross_entropy_with_logits(student(x), soft)
            """,
            note="sigmoid output as the TARGET is right: only the input is judged",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.model: SemanticModel = ctx.analysis(SemanticModel)
        #: Functional calls: the model collects only the loss functions other rules judge.
        self.functional: list[tuple[cst.Call, None, object]] = []

    def visit_Call(self, node: cst.Call) -> None:
        if self.model.qualname(node.func) not in _FUNCTIONS:
            return
        first = next((a for a in node.args if a.keyword is None and not a.star), None)
        first = first or next((a for a in node.args if a.keyword is not None and a.keyword.value == "input"), None)
        if first is not None:
            self.functional.append((node, None, self.model.later(first.value)))

    def finish(self) -> None:
        for node, callee, value in [*self.model.two_argument_calls(), *self.functional]:
            if not self._is_fused_loss(node, callee):
                continue
            wrong = [v for v in self.model.resolve(value) if type(v) is Tensor and v.kind == SIGMOID]
            if not wrong:
                continue
            origin = min((v.origin for v in wrong), key=lambda o: self._line(o))
            text = f" (from {origin.text} at line {self._line(origin)})" if origin.text else ""
            self.report(
                node,
                f"BCEWithLogitsLoss applies sigmoid itself; its input here is sigmoid output{text}: pass the logits",
            )

    def _is_fused_loss(self, node, callee) -> bool:
        if callee is None:
            return self.model.qualname(node.func) in _FUNCTIONS
        return any(type(c) is NNModule and c.qualname in _MODULES for c in self.model.resolve(callee))

    def _line(self, origin) -> int:
        return origin.line or (self.ctx.position(origin.node)[0] if origin.node is not None else 0)
