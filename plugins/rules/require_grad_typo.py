from __future__ import annotations

import libcst as cst

from torchlint.findings import Severity
from torchlint.fix import SAFE, UNSAFE, NodeFix
from torchlint.rule import Bad, Good, Rule


class RequireGradTypo(Rule):
    """
    ## What it does
    Flags the misspelling `require_grad` for `requires_grad`: assigning `x.require_grad = ...`
    and passing `require_grad=` to a torch function or class (`torch.zeros`,
    `torch.tensor`, `nn.Parameter`, ...).

    ## Why is this bad?
    Tensors and modules accept any new attribute, so `w.require_grad = False` silently does
    nothing: the weight keeps training (or, with `True`, never starts). As a keyword,
    `torch.zeros(3, require_grad=True)` raises `TypeError` at run time.

    Not flagged: a file that also reads `.require_grad` — there it is the author's own
    attribute, used consistently (`self.require_grad = flag` ... `if self.require_grad:`);
    keywords of non-torch functions, which may well have a `require_grad` parameter, and of
    private torch APIs (`torch.Tensor._make_subclass(cls, data, require_grad=...)` is right).

    ## Example
    ```python
    for p in backbone.parameters():
        p.require_grad = False
    bias = torch.zeros(10, require_grad=True)
    ```

    ## Use instead
    ```python
    for p in backbone.parameters():
        p.requires_grad = False          # or backbone.requires_grad_(False)
    bias = torch.zeros(10, requires_grad=True)
    ```

    ## Fix safety
    Renaming the keyword is safe: the call raises `TypeError` today, so no working
    behaviour changes. Renaming the attribute is unsafe: it changes what the program
    trains (the point, but it must be reviewed), and `x.requires_grad = ...` raises
    `RuntimeError` on a tensor that is not a leaf, where the typo silently did nothing.
    """

    code = "TL104"
    name = "require-grad-typo"
    summary = "`require_grad` is a typo for `requires_grad`; the assignment silently does nothing"
    severity = Severity.ERROR
    triggers = ("require_grad",)
    fix_safety = UNSAFE
    cases = [
        Bad(
            """
            import torch

            def freeze(model):
                for p in model.backbone.parameters():
                    p.require_grad = False  # error
            """,
            fixed="""
            import torch

            def freeze(model):
                for p in model.backbone.parameters():
                    p.requires_grad = False  # error
            """,
        ),
        Bad(
            """
            import torch
            from torch import nn
            bias = torch.zeros(10, require_grad=True)  # error
            w = nn.Parameter(torch.randn(3), require_grad=False)  # error
            """,
            fixed="""
            import torch
            from torch import nn
            bias = torch.zeros(10, requires_grad=True)  # error
            w = nn.Parameter(torch.randn(3), requires_grad=False)  # error
            """,
        ),
        Good(
            """
            import torch

            class Block(torch.nn.Module):
                def __init__(self, require_grad=True):
                    super().__init__()
                    self.require_grad = require_grad

                def forward(self, x):
                    return x if self.require_grad else x.detach()
            """,
            note="the author's own attribute, read back in the same file",
        ),
        Good(
            """
            import torch
            p.requires_grad = False
            t = torch.zeros(3, requires_grad=True)
            build_layer(require_grad=False)
            inputs_require_grad = True
            """,
            note="correct spellings, a non-torch function's keyword, and a variable name",
        ),
        Good(
            """
            import torch

            class Logged(torch.Tensor):
                def __new__(cls, data):
                    return torch.Tensor._make_subclass(cls, data, require_grad=data.requires_grad)
            """,
            note="private torch APIs have their own spelling: `_make_subclass` takes `require_grad`",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._assigned: list[cst.Attribute] = []
        self._targets: set[int] = set()
        self._read = False

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        target = node.target
        if type(target) is cst.Attribute and target.attr.value == "require_grad":
            self._assigned.append(target)
            self._targets.add(id(target))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "require_grad" and id(node) not in self._targets:
            self._read = True

    def visit_Call(self, node: cst.Call) -> None:
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "require_grad":
                qualified = self.ctx.qualname(node.func) or ""
                if qualified.startswith("torch.") and not _private(qualified) and not _private(_last_attr(node.func)):
                    self.report(
                        arg,
                        f"`require_grad=` is a typo: `{qualified}` takes `requires_grad` and raises TypeError",
                        fix=NodeFix("Rename to `requires_grad`", SAFE, ((arg.keyword, cst.Name("requires_grad")),)),
                    )

    def finish(self) -> None:
        if self._read:
            return
        for target in self._assigned:
            self.ctx.report(
                self,
                target,
                "`.require_grad` is a typo for `.requires_grad`: this assignment sets an unused attribute and changes nothing",
                fix=NodeFix("Rename to `requires_grad`", UNSAFE, ((target.attr, cst.Name("requires_grad")),)),
            )


def _private(dotted: str) -> bool:
    return any(part.startswith("_") for part in dotted.split("."))


def _last_attr(func: cst.BaseExpression) -> str:
    return func.attr.value if type(func) is cst.Attribute else ""
