from __future__ import annotations

import libcst as cst

from torchlint.fix import SAFE, NodeFix
from torchlint.rule import Bad, Good, Rule

from ._integer_values import WholeNumbers, annotation_kind
from ._numerics import LocalTags, is_one, only_positional

LOG_FUNCTIONS = frozenset({"torch.log"})


class LogOfOnePlus(LocalTags):
    """
    ## What it does
    Flags `torch.log(1 + x)` and `torch.log(x + 1)` (also with `1.0`).

    Off by default: on 20 public libraries and frameworks with their test suites, judged by
    reviewers who did not write the rule, 2 of 7 sampled findings were right (7 in all); the
    wrong ones took `log(1 + x)` of values that are never small (node degrees, constants bounded
    away from zero), where `log1p` changes nothing that matters. `--extend-select TL401` turns
    it on.

    ## Why is this bad?
    For small `x`, `1 + x` rounds to `1` before the logarithm sees it, so the result loses
    every significant digit: in float32, `torch.log(1 + 1e-8)` is `0.0` while
    `torch.log1p(1e-8)` is `1e-8`. `torch.log1p` computes `log(1 + x)` without forming `1 + x`.
    It keeps the dtype `torch.log(1 + x)` has (int and bool inputs give float32 in both).

    Only an `x` that may hold a small fraction matters. Whole numbers lose nothing, so `x` is
    left alone when it certainly holds them: an integer literal, `len(...)`, `int(...)`,
    `round(v)`, `math.ceil(...)`, `a // b`, `t.numel()`, `t.size(0)`, `t.shape[0]`, a count of
    `(pred == y).sum()`, `t.long()`, `torch.tensor(len(...))`, a local name assigned one of
    those, a parameter annotated `int` (or an item of one annotated `Tuple[int, int]`), a
    `torch.meshgrid`/`ndgrid` of such tensors with the views, casts and differences taken of
    it (integer grid offsets), or a name spelled like a count (`n`, `num_*`, `n_*`, `*_count`,
    `step`, `epoch`). A binding in the other arm of the same `if` does not count against a use.
    So is a stored tensor cast to floating point right there (`torch.log(lengths.float() + 1)`):
    float data needs no cast, and the cast is how integer counts become loggable.

    ## Example
    ```python
    y = torch.log(1 + x)
    ```

    ## Use instead
    ```python
    y = torch.log1p(x)
    ```

    ## Fix safety
    Safe: `torch.log1p(x)` computes the same function, only more accurately near zero, with the
    same dtype promotion. Calls with more arguments (`out=`) are reported but not fixed.
    """

    code = "TL401"
    name = "log-of-one-plus"
    summary = "`torch.log(1 + x)` loses precision for small `x`; use `torch.log1p(x)`"
    default_enabled = False
    triggers = ("log(",)
    imports = ("torch",)
    fix_safety = SAFE
    cases = [
        Bad(
            """
            import torch

            def entropy_bonus(x, rate):
                a = torch.log(1 + x)  # error
                b = torch.log(rate.exp() + 1.0) * 2  # error
                return a + b
            """,
            fixed="""
            import torch

            def entropy_bonus(x, rate):
                a = torch.log1p(x)  # error
                b = torch.log1p(rate.exp()) * 2  # error
                return a + b
            """,
        ),
        Bad(
            """
            import torch as T
            from torch import log

            def f(x, y):
                return T.log(1 + x * y), log(1 + x)  # error
            """,
            fixed="""
            import torch as T
            from torch import log

            def f(x, y):
                return T.log1p(x * y), T.log1p(x)  # error
            """,
            note="aliases; the fix keeps the module alias in use",
        ),
        Bad(
            """
            import torch

            y = torch.log(1 + x, out=buf)  # error
            """,
            fixed="""
            import torch

            y = torch.log(1 + x, out=buf)  # error
            """,
            note="reported but not fixed: extra arguments",
        ),
        Good("import torch\ny = torch.log(2 + x)\nz = torch.log(1 - x)\nw = torch.log(x + 1e-8)"),
        Good("import torch\ny = torch.log(1 + x + y)", note="`(1 + x) + y`: not a `1 + x` at the top"),
        Good("import math, numpy as np\na = math.log(1 + x)\nb = np.log(1 + x)", note="not torch"),
        Good(
            """
            import torch

            def f(torch, x):
                return torch.log(1 + x)
            """,
            note="a parameter named torch is not the module",
        ),
        Good(
            """
            import math
            import torch

            def idf(docs, term_counts, n_steps, seconds):
                n = len(docs)
                a = torch.log(1 + torch.tensor(n))
                b = torch.log(1 + term_counts.long()) + torch.log(torch.tensor(len(docs)) + 1)
                c = torch.log(1 + torch.tensor(n_steps)) + torch.log(1.0 + torch.tensor(round(seconds)))
                d = torch.log(1 + torch.tensor(math.ceil(seconds) // 2))
                e = torch.log(1 + (docs == 0).sum()) + torch.log(1 + docs.size(0) * torch.ones(3))
                return a, b, c, d, e
            """,
            note="whole numbers lose nothing: counts, lengths, rounded values, sizes",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F

            def duration_loss(predicted, frames):
                return F.mse_loss(predicted, torch.log(frames.float() + 1))
            """,
            note="a stored tensor cast to float where it is logged: integer frame counts",
        ),
        Bad(
            """
            import torch

            def damp(scores, total):
                return torch.log(1 + (scores / total).float())  # error
            """,
            note="a computed ratio cast to float is still a fraction",
        ),
        Bad(
            """
            import torch

            def smooth(counts, total):
                n = len(counts)
                freq = counts.float() / total
                return torch.log(1 + freq), torch.log(1 + n * freq)  # error
            """,
            note="a ratio of counts is a fraction, and so is a count times one",
        ),
        Good(
            """
            from typing import Tuple
            import torch

            def log_coords(win_size: Tuple[int, int], mode: str):
                h = torch.arange(-(win_size[0] - 1), win_size[0]).to(torch.float32)
                w = torch.arange(-(win_size[1] - 1), win_size[1]).to(torch.float32)
                table = torch.stack(ndgrid(h, w)).permute(1, 2, 0).contiguous()
                if mode == "swin":
                    table = table / (win_size[0] - 1) * 8
                    table = torch.sign(table) * torch.log2(1.0 + table.abs())
                else:
                    table = torch.sign(table) * torch.log(1.0 + table.abs())
                return table

            def pairwise(size: int):
                grid = torch.stack(torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")).flatten(1)
                offsets = grid[:, :, None] - grid[:, None, :]
                return torch.log(1 + offsets.permute(1, 2, 0).float().abs())
            """,
            note="grid offsets of aranges are whole numbers; the else arm does not see the if arm's division",
        ),
        Bad(
            """
            from typing import Tuple
            import torch

            def log_coords(win_size: Tuple[float, float], scale: bool):
                table = torch.stack(ndgrid(torch.arange(-win_size[0], win_size[0]), torch.arange(3)))
                a = torch.log(1.0 + table.abs())  # error
                grid = torch.stack(torch.meshgrid(torch.arange(4), torch.arange(4)))
                if scale:
                    grid = grid / 3
                return a, torch.log(1 + grid.abs())  # error
            """,
            note="a float start, and a binding that may have run before the use",
        ),
    ]

    def tag_of(self, expr: cst.BaseExpression) -> str | None:
        return self._whole_numbers().kind(expr)

    def param_tag(self, param: cst.Param) -> str | None:
        return annotation_kind(param.annotation.annotation if param.annotation is not None else None)

    def _whole_numbers(self) -> WholeNumbers:
        return WholeNumbers(self.lookup, self.ctx.qualname, by_spelling=True)

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) not in LOG_FUNCTIONS:
            return
        if not node.args or node.args[0].keyword is not None or node.args[0].star:
            return
        rest = _one_plus_rest(node.args[0].value)
        if rest is None or self._whole_numbers().kind(rest) is not None:
            return  # whole numbers lose nothing: `log(1 + n)` is exact enough for a count
        if _cast_of_stored_value(rest):
            return  # `log(1 + lengths.float())`: cast here from an integer (or bool) tensor
        fix = None
        func = _sibling_function(self, node.func, "log1p")
        if func is not None and only_positional(node, 1):
            new = cst.Call(func=func, args=[cst.Arg(rest.with_changes(lpar=[], rpar=[]) if _is_atomic(rest) else rest)])
            fix = NodeFix("Replace with `torch.log1p`", SAFE, ((node, new),))
        self.report(node, "`torch.log(1 + x)` loses precision for small `x`: use `torch.log1p(x)`", fix=fix)


def _cast_of_stored_value(expr: cst.BaseExpression) -> bool:
    """`x.float()` / `batch["durations"].double()`: a stored value cast to floating point at
    the very place it is logged. Float data needs no cast; the cast is how integer counts,
    lengths and masks become loggable (a computed value such as `(a / b).float()` is not
    this: it may be a fraction)."""
    if type(expr) is not cst.Call or expr.args or type(expr.func) is not cst.Attribute:
        return False
    if expr.func.attr.value not in ("float", "double"):
        return False
    return type(expr.func.value) in (cst.Name, cst.Attribute, cst.Subscript)


def _one_plus_rest(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """`x` for `1 + x` or `x + 1`, else None."""
    if type(expr) is not cst.BinaryOperation or type(expr.operator) is not cst.Add:
        return None
    if is_one(expr.left):
        return expr.right
    if is_one(expr.right):
        return expr.left
    return None


def _is_atomic(expr: cst.BaseExpression) -> bool:
    return type(expr) in (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


def _sibling_function(rule: Rule, func: cst.BaseExpression, name: str) -> cst.BaseExpression | None:
    """`torch.<name>` spelled the way the file spells torch: `T.log` -> `T.<name>`; for a bare
    `log` imported from torch, `<alias>.<name>` when the torch module itself is imported (and
    not re-bound here); else None."""
    if type(func) is cst.Attribute:
        return func.with_changes(attr=cst.Name(name))
    for local in sorted(rule.ctx.aliases.aliases):
        if rule.ctx.aliases.aliases[local] == "torch" and rule.ctx.qualname(cst.Name(local)) == "torch":
            return cst.Attribute(value=cst.Name(local), attr=cst.Name(name))
    return None
