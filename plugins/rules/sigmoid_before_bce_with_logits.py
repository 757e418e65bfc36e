from __future__ import annotations

import libcst as cst

from torchlint.rule import Bad, Good, Rule
from torchlint.semantic.model import SemanticModel
from torchlint.semantic.values import SIGMOID, Instance, Layer, NNModule, Sequence, Tensor
from torchlint.static.walker import iter_nodes

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

    It also flags a class that holds its own `nn.BCEWithLogitsLoss` in an attribute and
    whose output is sigmoid output, when nothing in the class applies that loss (the
    training loop that does lives elsewhere: a generic trainer, another file). Its output is
    what its `forward` returns in training mode; a class with no `forward` at all counts
    when its only network is an `nn.Sequential` ending in `nn.Sigmoid` that nothing in the
    class uses. The finding is at the sigmoid, the line to change. Not flagged: a class that
    applies its loss itself (judged where it does), a sigmoid the class uses inside its
    `forward` (a gate multiplied into features), a sigmoid built under an `if` or a
    conditional expression, and a class with another method returning logits (the loss may
    be meant for those).

    ## Why is this bad?
    `BCEWithLogitsLoss` applies the sigmoid itself. Given probabilities it applies a second
    one: every prediction is squashed into `[0.5, 0.73]`, the loss cannot go below about
    0.31 for a positive target or 0.69 for a negative one, and the gradient reaching the model
    is multiplied by the first sigmoid's derivative (at most 0.25). Training runs without an
    error and converges to a much worse model. A class and the loss it holds are meant to be
    combined; a sigmoid-ended class and the fused loss, combined, apply the sigmoid twice.

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
    (`torch.sigmoid(model(x))` where probabilities are wanted: metrics, predictions.)
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
        Bad(
            """
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.net = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())  # error
                    self.criterion = nn.BCEWithLogitsLoss()
            """,
            note="a class holding a net that ends in nn.Sigmoid and its own fused loss, applied by a trainer elsewhere",
        ),
        Bad(
            """
            import torch
            import torch.nn as nn

            class Classifier(nn.Module):
                def __init__(self, features):
                    super().__init__()
                    self.head = nn.Linear(features, 1)
                    self.loss_fn = nn.BCEWithLogitsLoss()

                def forward(self, x):
                    return torch.sigmoid(self.head(x)).squeeze(1)  # error
            """,
            note="its forward returns probabilities; its own loss wants logits",
        ),
        Good(
            """
            import torch
            import torch.nn as nn

            class Classifier(nn.Module):
                def __init__(self, features):
                    super().__init__()
                    self.head = nn.Linear(features, 1)
                    self.criterion = nn.BCEWithLogitsLoss()
                    self.sigmoid = nn.Sigmoid()

                def forward(self, x):
                    logits = self.head(x)
                    if self.training:
                        return logits
                    return torch.sigmoid(logits)

                def predict(self, x):
                    return self.sigmoid(self.head(x))
            """,
            note="logits in training mode, probabilities only at evaluation and from predict()",
        ),
        Good(
            """
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self, final_activation=False):
                    super().__init__()
                    self.head = nn.Linear(4, 1)
                    self.act = nn.Sigmoid() if final_activation else nn.Identity()
                    self.criterion = nn.BCEWithLogitsLoss()

                def forward(self, x):
                    return self.act(self.head(x))
            """,
            note="a sigmoid built only when a flag asks for it: the class may be trained without it",
        ),
        Good(
            """
            import torch
            import torch.nn as nn

            class TwoHeads(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.score = nn.Linear(4, 1)
                    self.aux = nn.Linear(4, 3)
                    self.aux_loss = nn.BCEWithLogitsLoss()

                def forward(self, x):
                    return torch.sigmoid(self.score(x))

                def aux_logits(self, x):
                    return self.aux(x)
            """,
            note="another method returns logits: the loss may be meant for those",
        ),
        Good(
            """
            import torch.nn as nn

            class GatedClassifier(nn.Module):
                def __init__(self, features):
                    super().__init__()
                    self.gate = nn.Sequential(nn.Linear(features, features), nn.Sigmoid())
                    self.head = nn.Linear(features, 1)
                    self.criterion = nn.BCEWithLogitsLoss()

                def forward(self, x):
                    return self.head(x * self.gate(x))
            """,
            note="a sigmoid gate multiplied into the features is not the class's output",
        ),
        Good(
            """
            import torch.nn as nn

            class Detector(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.body = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())
                    self.criterion = nn.BCELoss()
                    self.logit_loss = nn.BCEWithLogitsLoss()

                def forward(self, x):
                    return self.body(x)

                def loss(self, x, y, logits, labels):
                    return self.criterion(self(x), y) + self.logit_loss(logits, labels)
            """,
            note="the class applies its fused loss itself, to logits: judged where it is applied",
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
        reported: set[int] = set()
        for node, callee, value in [*self.model.two_argument_calls(), *self.functional]:
            if not self._is_fused_loss(node, callee):
                continue
            wrong = [v for v in self.model.resolve(value) if type(v) is Tensor and v.kind == SIGMOID]
            if not wrong:
                continue
            origin = min((v.origin for v in wrong), key=lambda o: self._line(o))
            reported.update(id(v.origin.node) for v in wrong)
            text = f" (from {origin.text} at line {self._line(origin)})" if origin.text else ""
            self.report(
                node,
                f"BCEWithLogitsLoss applies sigmoid itself; its input here is sigmoid output{text}: pass the logits",
            )
        self._classes_with_their_own_loss(reported)

    # -- a class whose output is sigmoid output, holding the fused loss it is trained with ----------
    def _classes_with_their_own_loss(self, reported: set[int]) -> None:
        for name, info in self.model.classes.items():
            losses = [attr for attr, values in info.attrs.items() if self._holds_fused_loss(values)]
            if not losses:
                continue
            loads = _self_attribute_loads(info.node)
            if any(loads.get(attr) for attr in losses):
                continue  # the class applies its loss: what reaches it is judged at the call
            if self._other_tensor_output(info):
                continue  # `def logits(self, x)`: the loss may be meant for that output
            found = self._output_sigmoid(name, info, losses, loads)
            if found is None:
                continue
            sigmoid, where = found
            if id(sigmoid.node) in reported:
                continue  # a call of this file feeds that output to the loss: reported there
            if id(sigmoid.node) in self._conditional():
                continue  # `nn.Sigmoid() if final_act else nn.Identity()`: the output may be logits
            loss_line = self._attr_line(info.node, losses[0])
            self.report(
                sigmoid.node,
                f"{where.format(sigmoid.text)}, and `{name}`'s own loss `self.{losses[0]}` (line "
                f"{loss_line}) is BCEWithLogitsLoss, which applies sigmoid itself: output the logits and "
                "apply the sigmoid only where probabilities are wanted (or use BCELoss)",
            )

    def _other_tensor_output(self, info) -> bool:
        """Whether a method other than forward returns a tensor that is not sigmoid output."""
        for method, function in info.methods.items():
            if method in ("forward", "__call__") or method.startswith("__"):
                continue
            for value in function.returns:
                if any(type(v) is Tensor and v.kind != SIGMOID for v in self.model.resolve(value)):
                    return True
        return False

    def _conditional(self) -> frozenset[int]:
        """Nodes (by id) under an `if` or a conditional expression: a sigmoid built only when
        a flag says so (the class may be built without it where its loss is used)."""
        found = self.model.memo.get("TL109 conditional")
        if found is None:
            ids: set[int] = set()
            for node in iter_nodes(self.ctx.module):
                kind = type(node)
                if kind is cst.If or kind is cst.IfExp:
                    branches = [node.body] + ([node.orelse] if node.orelse is not None else [])
                    for branch in branches:
                        ids.update(id(n) for n in iter_nodes(branch))
            found = self.model.memo["TL109 conditional"] = frozenset(ids)
        return found

    def _holds_fused_loss(self, values) -> bool:
        return any(self._is_fused_module(v) for value in values for v in self.model.resolve(value))

    def _is_fused_module(self, value) -> bool:
        return type(value) is NNModule and value.qualname in _MODULES

    def _output_sigmoid(self, name, info, losses, loads):
        """The origin of the sigmoid the class outputs, and a message clause saying where it is
        (a format string for the sigmoid's text)."""
        has_forward = self.model.method(name, "forward") is not None or self.model.method(name, "__call__") is not None
        output = self.model.forward_output(name)
        if has_forward or output:
            values = [v for value in output for v in self.model.resolve(value)]
            # Every value its forward may return is sigmoid output: a branch returning logits
            # (or a tuple, a dict) is no evidence.
            if values and all(type(v) is Tensor and v.kind == SIGMOID for v in values):
                origin = values[0].origin
                if origin.node is not None and not origin.path:
                    return origin, f"`{name}.forward` returns sigmoid output ({{}})"
            return None
        # No forward anywhere: the class is a holder of a net and its loss. Its only network
        # must be a Sequential ending in a sigmoid that the class never uses itself.
        networks = [
            attr for attr, values in info.attrs.items()
            if attr not in losses and any(self._is_network(v) for value in values for v in self.model.resolve(value))
        ]
        if len(networks) != 1 or loads.get(networks[0]):
            return None
        (attr,) = networks
        values = [v for value in info.attrs[attr] for v in self.model.resolve(value)]
        if len(values) != 1 or type(values[0]) is not Sequence or values[0].kind != "sequential":
            return None
        outputs = self.model.apply(values[0])
        if outputs and all(type(v) is Tensor and v.kind == SIGMOID for v in outputs):
            origin = next(iter(outputs)).origin
            if origin.node is not None and not origin.path:
                return origin, f"`{name}.{attr}` ends in {{}}, so it outputs probabilities"
        return None

    def _is_network(self, value) -> bool:
        kind = type(value)
        if kind is Sequence:
            return value.kind in ("sequential", "modulelist", "moduledict")
        return kind is Layer or kind is Instance or (kind is NNModule and value.parametric)

    def _attr_line(self, class_node: cst.ClassDef, attr: str) -> int:
        for node in iter_nodes(class_node):
            if (type(node) is cst.AssignTarget or type(node) is cst.AnnAssign) and _is_self_attr(node.target, attr):
                return self.ctx.position(node)[0]
        return self.ctx.position(class_node)[0]

    def _is_fused_loss(self, node, callee) -> bool:
        if callee is None:
            return self.model.qualname(node.func) in _FUNCTIONS
        return any(type(c) is NNModule and c.qualname in _MODULES for c in self.model.resolve(callee))

    def _line(self, origin) -> int:
        return origin.line or (self.ctx.position(origin.node)[0] if origin.node is not None else 0)


def _is_self_attr(node: cst.CSTNode, attr: str | None = None) -> bool:
    return (
        type(node) is cst.Attribute
        and type(node.value) is cst.Name
        and node.value.value == "self"
        and (attr is None or node.attr.value == attr)
    )


def _self_attribute_loads(class_node: cst.ClassDef) -> dict[str, int]:
    """How often each `self.<attr>` is read in the class (assignments to it are not reads)."""
    stored = set()
    for node in iter_nodes(class_node):
        if type(node) is cst.AssignTarget or type(node) is cst.AnnAssign:
            stored.add(id(node.target))
    loads: dict[str, int] = {}
    for node in iter_nodes(class_node):
        if _is_self_attr(node) and id(node) not in stored:
            loads[node.attr.value] = loads.get(node.attr.value, 0) + 1
    return loads
