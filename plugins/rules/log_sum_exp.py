from __future__ import annotations

import libcst as cst

from torchlint.rule import Bad, Good, Rule
from torchlint.static.walker import iter_nodes

from ._torchfix_helpers import positional_args


class LogSumExp(Rule):
    """
    ## What it does
    Flags `log(sum(exp(x)))` written out with torch operations — `torch.log(torch.sum(
    torch.exp(x), dim))`, `x.exp().sum(dim).log()` and their mixtures.

    ## Why is this bad?
    `exp` overflows to `inf` for inputs above ~88 in float32 (~11 in float16), and
    underflows to 0 for very negative ones, so the result becomes `inf` or `-inf` where
    `torch.logsumexp(x, dim)` subtracts the maximum first and stays finite. It is also one
    fused kernel instead of three.

    Not flagged: an `exp` of a difference (`exp(x - m)`, or of a name assigned one in the
    same function: `shifted = x - m`), the hand-written stable form; and code inside a
    function named `logsumexp`, which is implementing it.

    ## Example
    ```python
    lse = torch.log(torch.sum(torch.exp(logits), dim=-1))
    ```

    ## Use instead
    ```python
    lse = torch.logsumexp(logits, dim=-1)
    ```
    """

    code = "TL509"
    name = "manual-log-sum-exp"
    summary = "`log(sum(exp(x)))` overflows; use `torch.logsumexp`"
    triggers = ("exp(",)  # the pattern is nested calls; plain "exp" matched every `except`
    cases = [
        Bad(
            """
            import torch
            a = torch.log(torch.sum(torch.exp(logits), dim=-1))  # error
            b = logits.exp().sum(-1).log()  # error
            c = torch.log(torch.exp(x).sum(1, keepdim=True))  # error
            """
        ),
        Bad(
            """
            import torch as T
            def energy(scores):
                return -T.sum(T.exp(scores), 0).log()  # error
            """
        ),
        Good(
            """
            import torch
            m = x.max(dim=-1, keepdim=True).values
            lse = m + torch.log(torch.sum(torch.exp(x - m), dim=-1, keepdim=True))
            ok = torch.logsumexp(x, dim=-1)
            """,
            note="the hand-stabilised form and logsumexp",
        ),
        Good(
            """
            import torch

            def log_softmax(x, dim):
                shifted = x - x.amax(dim, keepdim=True)
                return shifted - torch.log(torch.sum(torch.exp(shifted), dim, keepdim=True))

            def logsumexp(x, dim):
                if x.numel() == 0:
                    return torch.sum(torch.exp(x), dim).log()
                return _fused(x, dim)
            """,
            note="stabilised through a variable, and an implementation of logsumexp itself",
        ),
        Good(
            """
            import numpy as np, math, torch
            a = np.log(np.sum(np.exp(x)))
            b = math.log(sum(math.exp(v) for v in xs))
            c = torch.log(torch.exp(x) + 1)
            d = torch.log(torch.sum(x, dim=1))
            """,
            note="numpy, math, softplus-like, and a log of a plain sum",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        inner = self._log_operand(node)
        if inner is None:
            return
        summed = self._sum_operand(inner)
        if summed is not None and self._is_unstable_exp(summed):
            self.report(node, "`log(sum(exp(x)))` overflows for large x; use `torch.logsumexp(x, dim)`")

    # `torch.log(y)` or `y.log()` -> y
    def _log_operand(self, node: cst.Call) -> cst.BaseExpression | None:
        func = node.func
        if type(func) is cst.Attribute and func.attr.value == "log" and not node.args:
            if self.ctx.qualname(func.value) is None:  # a method, not `math.log()`
                return func.value
        elif self.ctx.qualname(func) == "torch.log":
            args = positional_args(node)
            return args[0].value if args else None
        return None

    # `torch.sum(y, ...)` or `y.sum(...)` -> y
    def _sum_operand(self, node: cst.BaseExpression) -> cst.BaseExpression | None:
        if type(node) is not cst.Call:
            return None
        func = node.func
        if self.ctx.qualname(func) == "torch.sum":
            args = positional_args(node)
            return args[0].value if args else None
        if type(func) is cst.Attribute and func.attr.value == "sum" and self.ctx.qualname(func.value) is None:
            return func.value
        return None

    def _is_unstable_exp(self, node: cst.BaseExpression) -> bool:
        if type(node) is not cst.Call:
            return False
        func = node.func
        if self.ctx.qualname(func) == "torch.exp":
            args = positional_args(node)
            operand = args[0].value if args else None
        elif type(func) is cst.Attribute and func.attr.value == "exp" and not node.args and self.ctx.qualname(func.value) is None:
            operand = func.value
        else:
            return False
        if operand is None or _is_difference(operand):
            return False
        function = self.ctx.enclosing_function()
        if function is not None and function.name.value == "logsumexp":
            return False
        return not (type(operand) is cst.Name and self._assigned_a_difference(operand.value, function))

    def _assigned_a_difference(self, name: str, function: cst.FunctionDef | None) -> bool:
        """`shifted = x - m` in the same function (or module) before the exp."""
        scope = function.body if function is not None else self.ctx.module
        for node in iter_nodes(scope, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            if type(node) is cst.Assign and _is_difference(node.value):
                if any(type(t.target) is cst.Name and t.target.value == name for t in node.targets):
                    return True
        return False


def _is_difference(node: cst.BaseExpression) -> bool:
    return type(node) is cst.BinaryOperation and type(node.operator) is cst.Subtract
