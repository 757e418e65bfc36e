from __future__ import annotations

import libcst as cst

from torchlint.fix import SAFE, NodeFix
from torchlint.rule import Bad, Good

from ._integer_values import WholeNumbers, annotation_kind
from ._numerics import LocalTags, is_one, only_positional
from .log_of_one_plus import _sibling_function

EXP_FUNCTIONS = frozenset({"torch.exp"})
#: Rounding to whole numbers: the digits `exp(x) - 1` loses near zero are rounded away anyway.
ROUNDING_FUNCTIONS = frozenset({"torch.round", "torch.floor", "torch.ceil", "torch.trunc", "round", "int",
                                "math.floor", "math.ceil", "math.trunc"})
ROUNDING_METHODS = frozenset({"round", "floor", "ceil", "trunc", "long", "int"})
#: Nodes between `exp(x) - 1` and a rounding call that keep it an arithmetic of the value.
_ARITHMETIC = frozenset({"Arg", "BinaryOperation", "UnaryOperation"})


class ExpMinusOne(LocalTags):
    """
    ## What it does
    Flags `torch.exp(x) - 1` (also with `1.0`).

    Off by default: on 20 public libraries and frameworks with their test suites, judged by
    reviewers who did not write the rule, 0 of 3 sampled findings were right (3 in all); in each
    the lost digits vanished in what the result was compared with or added to. `--extend-select
    TL402` turns it on.

    ## Why is this bad?
    For small `x`, `exp(x)` is `1 + x` to within rounding, and subtracting `1` cancels every
    significant digit: in float32, `torch.exp(1e-8) - 1` is `0.0` while `torch.expm1(1e-8)` is
    `1e-8`. `torch.expm1` computes `exp(x) - 1` directly. It keeps the dtype `torch.exp(x) - 1`
    has (int and bool inputs give float32 in both).

    Only a subtraction whose left side is the `torch.exp(...)` call itself is flagged:
    `y - torch.exp(x) - 1` is `(y - exp(x)) - 1` and is left alone. So is an `x` that
    certainly holds whole numbers (an integer literal, `len(...)`, `int(...)`, `round(v)`,
    `a // b`, `t.numel()`, `t.size(0)`, `t.shape[0]`, `t.long()`, `torch.tensor(len(...))`, a
    local name assigned one of those, a parameter annotated `int` or an item of one annotated
    `Tuple[int, ...]`, a `meshgrid` of whole aranges, or a name spelled like a count such as `n_steps`): the
    precision lost is that of a small fraction, and `exp(n) - 1` for a whole `n` has none.
    Nor is a result that is rounded to whole numbers right away: inside `torch.round(...)`,
    `.round()`, `.long()`, `int(...)` (through arithmetic such as `* scale`), or assigned to a
    name that the next statement rounds (`d = torch.exp(x) - 1` then `d = d.round()`), as
    speech models do to turn predicted log-durations into frame counts.

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
    default_enabled = False
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
        Good(
            """
            import torch

            def durations(log_dur, scale):
                frames = torch.clamp(torch.round((torch.exp(log_dur) - 1) * scale).long(), min=0)
                counts = (torch.exp(log_dur) - 1).long()
                d = torch.exp(log_dur) - 1
                d = torch.round(d)
                return frames, counts, d
            """,
            note="rounded to whole frames at once: the lost digits would be rounded away",
        ),
        Bad(
            """
            import torch

            def durations(log_dur, scale):
                d = torch.exp(log_dur) - 1  # error
                total = d.sum()
                d = d.round()
                return torch.round(scale(torch.exp(log_dur) - 1)), total  # error
            """,
            note="used before it is rounded; rounded only after a call that may amplify it",
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

    def param_tag(self, param: cst.Param) -> str | None:
        return annotation_kind(param.annotation.annotation if param.annotation is not None else None)

    def _whole_numbers(self) -> WholeNumbers:
        return WholeNumbers(self.lookup, self.ctx.qualname, by_spelling=True)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if type(node.operator) is not cst.Subtract or not is_one(node.right):
            return
        call = node.left
        if type(call) is not cst.Call or call.lpar or self.ctx.qualname(call.func) not in EXP_FUNCTIONS:
            return
        if not call.args or call.args[0].keyword is not None or call.args[0].star:
            return
        if self._whole_numbers().kind(call.args[0].value) is not None:
            return  # whole numbers lose nothing: `exp(n) - 1` is exact enough for a count
        if self._rounded_in_expression(node) or self._rounded_by_next_statement(node):
            return
        fix = None
        func = _sibling_function(self, call.func, "expm1")
        if func is not None and only_positional(call, 1):
            fix = NodeFix("Replace with `torch.expm1`", SAFE, ((node, cst.Call(func=func, args=[cst.Arg(call.args[0].value)])),))
        self.report(node, "`torch.exp(x) - 1` loses precision for small `x`: use `torch.expm1(x)`", fix=fix)

    def _rounded_in_expression(self, node: cst.BinaryOperation) -> bool:
        """`torch.round((exp(x) - 1) * k)`, `(exp(x) - 1).long()`: a rounding reached from
        `node` through arithmetic only."""
        ancestors = self.ctx.ancestors
        child: cst.CSTNode = node
        for index in range(len(ancestors) - 1, -1, -1):
            parent = ancestors[index]
            if type(parent) is cst.Call:
                if child is parent.func:
                    return False
                return _rounding_function(self, parent)
            if type(parent) is cst.Attribute:
                above = ancestors[index - 1] if index else None
                return (parent.attr.value in ROUNDING_METHODS and type(above) is cst.Call
                        and above.func is parent and not above.args)
            if type(parent).__name__ not in _ARITHMETIC:
                return False
            child = parent
        return False

    def _rounded_by_next_statement(self, node: cst.BinaryOperation) -> bool:
        """`d = torch.exp(x) - 1` directly followed by `d = d.round()` or `d = torch.round(d)`."""
        ancestors = self.ctx.ancestors
        if len(ancestors) < 3 or type(ancestors[-1]) is not cst.Assign or ancestors[-1].value is not node:
            return False
        assign, line, block = ancestors[-1], ancestors[-2], ancestors[-3]
        if len(assign.targets) != 1 or type(assign.targets[0].target) is not cst.Name or len(line.body) != 1:
            return False
        name = assign.targets[0].target.value
        body = list(getattr(block, "body", ()))
        position = next((i for i, statement in enumerate(body) if statement is line), None)
        if position is None or position + 1 >= len(body):
            return False
        following = body[position + 1]
        if type(following) is not cst.SimpleStatementLine or type(following.body[0]) is not cst.Assign:
            return False
        rebind = following.body[0]
        targets = [target.target for target in rebind.targets]
        if not any(type(target) is cst.Name and target.value == name for target in targets):
            return False
        value = rebind.value
        if type(value) is not cst.Call:
            return False
        if type(value.func) is cst.Attribute and value.func.attr.value in ROUNDING_METHODS and not value.args:
            return type(value.func.value) is cst.Name and value.func.value.value == name
        argument = value.args[0].value if value.args else None
        return _rounding_function(self, value) and type(argument) is cst.Name and argument.value == name


def _rounding_function(rule: ExpMinusOne, call: cst.Call) -> bool:
    name = rule.ctx.qualname(call.func)
    if name is None and type(call.func) is cst.Name:
        name = call.func.value  # builtins: round, int
    return name in ROUNDING_FUNCTIONS
