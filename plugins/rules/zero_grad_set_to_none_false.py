from __future__ import annotations

import libcst as cst

from torchlint.rule import Bad, Good, Rule

from ._torchfix_helpers import is_name, keyword_arg, positional_args


class ZeroGradSetToNoneFalse(Rule):
    """
    ## What it does
    Flags `.zero_grad(set_to_none=False)` (or `.zero_grad(False)`) on an optimizer or a
    module, in files that never update a `.grad` in place.

    ## Why is this bad?
    Since torch 2.0 the default, `set_to_none=True`, frees gradient memory between steps
    and skips a memset kernel per parameter; `False` writes zeros into every gradient
    instead. Optimizers treat a None grad as "no update", so it is also the more correct
    behaviour for parameters that did not take part in a step.

    Not flagged: files that update `.grad` in place (`p.grad += g`, `p.grad.add_(...)`),
    which need gradients to exist after zeroing — the reason to write `False` at all.

    ## Example
    ```python
    optimizer.zero_grad(set_to_none=False)
    ```

    ## Use instead
    ```python
    optimizer.zero_grad()
    ```

    ## Known limitations
    The in-place check is per file; gradients accumulated in place from another module are
    not seen. Off by default: the one occurrence in the corpora needed `False`.
    """

    code = "TL403"
    name = "zero-grad-set-to-none-false"
    summary = "`zero_grad(set_to_none=False)` keeps zeroed gradients alive; the default frees them"
    default_enabled = False
    triggers = ("set_to_none", "zero_grad(False")
    cases = [
        Bad(
            """
            for x, y in loader:
                optimizer.zero_grad(set_to_none=False)  # error
                loss_fn(model(x), y).backward()
                optimizer.step()
            """
        ),
        Bad(
            """
            model.zero_grad(False)  # error
            """
        ),
        Good(
            """
            optimizer.zero_grad()
            optimizer.zero_grad(set_to_none=True)
            model.zero_grad(set_to_none=flag)
            """,
            note="the default, and a non-literal",
        ),
        Good(
            """
            def apply(self, grads):
                for p, g in zip(self.model.parameters(), grads):
                    p.grad += g
                self.optimizer.step()
                self.optimizer.zero_grad(set_to_none=False)
            """,
            note="gradients accumulated in place need to exist after zeroing",
        ),
        Good(
            """
            for p in params:
                p.grad.add_(noise)
            opt.zero_grad(set_to_none=False)
            """,
            note="an in-place method on .grad",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._calls: list[cst.Call] = []
        self._grad_in_place = False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if type(func) is not cst.Attribute:
            return
        if func.attr.value == "zero_grad":
            arg = keyword_arg(node, "set_to_none") or (positional_args(node)[:1] or [None])[0]
            if arg is not None and is_name(arg.value, "False"):
                self._calls.append(node)
        elif func.attr.value.endswith("_") and _is_grad(func.value):
            self._grad_in_place = True

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if _is_grad(node.target) or (type(node.target) is cst.Subscript and _is_grad(node.target.value)):
            self._grad_in_place = True

    def finish(self) -> None:
        if self._grad_in_place:
            return
        for call in self._calls:
            self.ctx.report(self, call, "`zero_grad(set_to_none=False)` writes zeros into every gradient; "
                            "the default (set_to_none=True) frees them and is faster")


def _is_grad(node: cst.BaseExpression) -> bool:
    return type(node) is cst.Attribute and node.attr.value == "grad"
