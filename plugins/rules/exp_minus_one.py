from __future__ import annotations

import libcst as cst

from torchlint.fix import SAFE, NodeFix
from torchlint.rule import Bad, Good

from ._integer_values import WholeNumbers
from ._numerics import LocalTags, is_one, only_positional
from .log_of_one_plus import _sibling_function

EXP_FUNCTIONS = frozenset({"torch.exp"})


class ExpMinusOne(LocalTags):
    """
    ## What it does
    Flags `torch.exp(x) - 1` (also with `1.0`).

    ## Why is this bad?
    For small `x`, `exp(x)` is `1 + x` to within rounding, and subtracting `1` cancels every
    significant digit: in float32, `torch.exp(1e-8) - 1` is `0.0` while `torch.expm1(1e-8)` is
    `1e-8`. `torch.expm1` computes `exp(x) - 1` directly. It keeps the dtype `torch.exp(x) - 1`
    has (int and bool inputs give float32 in both).

    Only a subtraction whose left side is the `torch.exp(...)` call itself is flagged:
    `y - torch.exp(x) - 1` is `(y - exp(x)) - 1` and is left alone. So is an `x` that
    certainly holds whole numbers (an integer literal, `len(...)`, `int(...)`, `round(v)`,
    `a // b`, `t.numel()`, `t.size(0)`, `t.shape[0]`, `t.long()`, `torch.tensor(len(...))`, a
    local name assigned one of those, or a name spelled like a count such as `n_steps`): the
    precision lost is that of a small fraction, and `exp(n) - 1` for a whole `n` has none.

    ## Example
    ```python
    y = torch.exp(x) - 1
    ```

    ## Use instead
    ```python
    y = torch.expm1(x)
    ```

    ## Fix safety
    Safe: `torch.expm1(x)` computes the same function, only more accurately near zero, with the
    same dtype promotion. Calls with more arguments (`out=`) are reported but not fixed.
    """

    code = "TL402"
    name = "exp-minus-one"
    summary = "`torch.exp(x) - 1` loses precision for small `x`; use `torch.expm1(x)`"
    triggers = ("exp(",)
    imports = ("torch",)
    fix_safety = SAFE
    cases = [
        Bad(
            """
            import torch

            def elu_like(x, alpha):
                neg = alpha * (torch.exp(x) - 1)  # error
                return torch.exp(x / 2) - 1.0 + neg  # error
            """,
            fixed="""
            import torch

            def elu_like(x, alpha):
                neg = alpha * (torch.expm1(x))  # error
                return torch.expm1(x / 2) + neg  # error
            """,
        ),
        Bad(
            """
            import torch
            from torch import exp

            y = exp(x) - 1  # error
            z = torch.exp(x, out=buf) - 1  # error
            """,
            fixed="""
            import torch
            from torch import exp

            y = torch.expm1(x)  # error
            z = torch.exp(x, out=buf) - 1  # error
            """,
            note="a bare imported `exp`; `out=` is reported but not fixed",
        ),
        Good("import torch\ny = torch.exp(x) - 2\nz = 1 - torch.exp(x)\nw = torch.exp(x) + 1"),
        Good("import torch\ny = a - torch.exp(x) - 1\nz = a * torch.exp(x) - 1", note="`(a - exp(x)) - 1`, `(a * exp(x)) - 1`"),
        Good("import math, numpy as np\na = math.exp(x) - 1\nb = np.exp(x) - 1", note="not torch"),
        Good("import torch\ny = x.exp() - 1", note="method form: the receiver may not be a tensor (`Decimal.exp`)"),
        Good(
            """
            import torch

            def growth(history, n_epochs):
                steps = torch.tensor(len(history))
                return torch.exp(steps) - 1, torch.exp(torch.tensor(n_epochs) // 2) - 1, torch.exp(history.long()) - 1
            """,
            note="whole numbers: a length, a count, a floor division, an integer cast",
        ),
        Bad(
            """
            import torch

            def growth(history, n_epochs):
                rate = history.float().mean()
                return torch.exp(rate * n_epochs) - 1  # error
            """,
            note="a mean is a fraction, whatever it is multiplied by",
        ),
    ]

    def tag_of(self, expr: cst.BaseExpression) -> str | None:
        return self._whole_numbers().kind(expr)

    def _whole_numbers(self) -> WholeNumbers:
        return WholeNumbers(self.lookup, self.ctx.qualname, by_spelling=True)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, cst.Subtract) or not is_one(node.right):
            return
        call = node.left
        if not isinstance(call, cst.Call) or call.lpar or self.ctx.qualname(call.func) not in EXP_FUNCTIONS:
            return
        if not call.args or call.args[0].keyword is not None or call.args[0].star:
            return
        if self._whole_numbers().kind(call.args[0].value) is not None:
            return  # whole numbers lose nothing: `exp(n) - 1` is exact enough for a count
        fix = None
        func = _sibling_function(self, call.func, "expm1")
        if func is not None and only_positional(call, 1):
            fix = NodeFix("Replace with `torch.expm1`", SAFE, ((node, cst.Call(func=func, args=[cst.Arg(call.args[0].value)])),))
        self.report(node, "`torch.exp(x) - 1` loses precision for small `x`: use `torch.expm1(x)`", fix=fix)
