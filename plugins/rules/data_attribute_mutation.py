from __future__ import annotations

import re

import libcst as cst

from torchlint.rule import Bad, Good, Rule
from torchlint.static.names import dotted_name

#: Initialisation and model surgery (fusing BN into convs, re-parameterising, converting or
#: loading weights): they run on modules no backward pass is holding on to.
_INIT_FUNCTION = re.compile(r"init|reset|fuse|reparam|convert|deploy|merge|load|freeze", re.IGNORECASE)


class DataAttributeMutation(Rule):
    """
    ## What it does
    Flags tensors mutated through `.data`: in-place methods on it (`p.data.copy_(w)`,
    `p.data.mul_(decay).add_(...)`, `p.data.clamp_(-c, c)`), assignment to it (`p.data = w`,
    `p.data[idx] = v`, `p.data += v`). Gradients (`p.grad.data.zero_()`), initialisation code
    (functions whose name contains `init` or `reset`, such as `__init__`, `reset_parameters`,
    `_init_weights`) and model surgery (`fuse`, `reparam`, `convert`, `deploy`, `merge`, `load`, `freeze`
    in the function's name) are left alone.

    Off by default: `.data` mutation is widespread legacy (EMA updates, weight clipping,
    checkpoint surgery) that is usually harmless when it happens between steps; enable it
    to modernise a code base.

    ## Why is this bad?
    `.data` gives a view that autograd does not track: mutating it does not bump the tensor's
    version counter, so if the tensor was saved for a backward pass that has not run yet,
    backward silently uses the new values and computes wrong gradients instead of raising.
    `with torch.no_grad():` plus the in-place op on the tensor itself does the same update
    and keeps that safety check.

    ## Example
    ```python
    for ema_p, p in zip(ema.parameters(), model.parameters()):
        ema_p.data.mul_(decay).add_(p.data, alpha=1 - decay)
    ```

    ## Use instead
    ```python
    with torch.no_grad():
        for ema_p, p in zip(ema.parameters(), model.parameters()):
            ema_p.mul_(decay).add_(p, alpha=1 - decay)
    ```
    """

    code = "TL606"
    name = "data-attribute-mutation"
    summary = "parameter mutated through `.data`, hidden from autograd's version checks"
    triggers = (".data",)
    default_enabled = False
    cases = [
        Bad(
            """
            def update_ema(ema, model, decay):
                for ema_p, p in zip(ema.parameters(), model.parameters()):
                    ema_p.data.mul_(decay).add_(p.data, alpha=1 - decay)  # error

            def clip(critic, c):
                for p in critic.parameters():
                    p.data.clamp_(-c, c)  # error
            """
        ),
        Bad(
            """
            def patch(model, weights):
                model.fc.weight.data = weights["fc"]  # error
                model.fc.bias.data[0] = 1.0  # error
                model.scale.data += 1  # error
            """
        ),
        Good(
            """
            import torch

            def update_ema(ema, model, decay):
                with torch.no_grad():
                    for ema_p, p in zip(ema.parameters(), model.parameters()):
                        ema_p.mul_(decay).add_(p, alpha=1 - decay)
            """
        ),
        Good(
            """
            class Net:
                def __init__(self):
                    self.fc.weight.data.normal_(0, 0.02)

                def reset_parameters(self):
                    self.fc.bias.data.zero_()

            def _init_weights(m):
                m.weight.data.fill_(1.0)

            class Block:
                def fuse(self):
                    self.conv.weight.data = w
                    self.conv.bias.data.copy_(b)
            """,
            note="initialisation code and model surgery",
        ),
        Good(
            """
            def step(params, lr):
                for p in params:
                    p.grad.data.zero_()
                    x = p.data.clone()
                    n = p.data.norm()
                    batch.data = batch.data.to(device)
            """,
            note="gradients, reads, and a non-in-place method whose result is assigned elsewhere",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (type(func) is cst.Attribute and _is_inplace(func.attr.value)):
            return
        owner = func.value
        if type(owner) is cst.Attribute and owner.attr.value == "data" and self._counts(owner):
            self.report(node, f"`{_spell(owner)}.{func.attr.value}(...)` mutates through `.data`, hidden from autograd; "
                        f"use `with torch.no_grad(): {_spell(owner.value)}.{func.attr.value}(...)`")

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._check_target(node, target.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check_target(node, node.target)

    def _check_target(self, node: cst.CSTNode, target: cst.BaseExpression) -> None:
        if type(target) is cst.Subscript:
            target = target.value
        if type(target) is cst.Attribute and target.attr.value == "data" and self._counts(target):
            self.report(node, f"assigning to `{_spell(target)}` hides the change from autograd; "
                        f"use `with torch.no_grad(): {_spell(target.value)}.copy_(...)`")

    def _counts(self, data: cst.Attribute) -> bool:
        owner = data.value
        if type(owner) is cst.Attribute and owner.attr.value == "grad":
            return False
        if type(owner) is cst.Name and owner.value in ("batch", "self"):
            return False  # a data-holder object, not a tensor
        return not any(
            type(a) is cst.FunctionDef and _INIT_FUNCTION.search(a.name.value) for a in self.ctx.ancestors
        )


def _is_inplace(method: str) -> bool:
    return method.endswith("_") and not method.startswith("_")


def _spell(node: cst.BaseExpression) -> str:
    return dotted_name(node) or "tensor.data"
