"""Where autograd records: grad-mode contexts, decorators and custom autograd Functions.

Part of the semantic model's autograd questions (torchlint.semantic.autograd). Everything
here reads names, never imports torch. When a context manager or decorator *might* turn grad off
(`torch.no_grad() if eval else nullcontext()`, a project's own `@no_grad_if(...)`), we say
it does: rules built on this stay quiet rather than guess.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Iterator, Optional

import libcst as cst

from torchlint.static.names import dotted_name

#: Last components of calls or names whose context turns grad recording off.
_DISABLING = ("no_grad", "inference_mode")
#: Spelled inside a project's own helper names (`_use_grad_for_differentiable` in torch.optim,
#: `maybe_no_grad`, ...): treated as possibly disabling.
_DISABLING_HINTS = ("no_grad", "inference_mode", "set_grad_enabled", "use_grad")


def _is_literal(node: cst.BaseExpression | None, value: str) -> bool:
    return type(node) is cst.Name and node.value == value


def grad_effect(expr: cst.BaseExpression) -> Optional[bool]:
    """How entering `expr` (a `with` item or a decorator) sets grad mode: False when it turns
    recording off (or might), True when it turns it on, None when it does not touch it."""
    func = expr.func if type(expr) is cst.Call else expr
    name = dotted_name(func)
    if name is not None:
        last = name.rpartition(".")[2]
        args = [a for a in expr.args if a.keyword is None] if type(expr) is cst.Call else []
        if last == "enable_grad":
            return True
        if last == "set_grad_enabled":
            # set_grad_enabled(True) turns recording on; False or an expression may turn it off.
            return True if args and _is_literal(args[0].value, "True") else False
        if last == "inference_mode" and args and _is_literal(args[0].value, "False"):
            return None  # inference_mode(False) leaves grad mode as it was
        if last in _DISABLING:
            return False
        if any(hint in last.lower() for hint in _DISABLING_HINTS):
            return False
        return None
    # Not a plain call: `torch.no_grad() if cond else nullcontext()` and friends.
    return False if _mentions_grad_switch(expr) else None


def _mentions_grad_switch(expr: cst.CSTNode) -> bool:
    stack = [expr]
    while stack:
        node = stack.pop()
        if type(node) is cst.Name and any(hint in node.value.lower() for hint in _DISABLING_HINTS):
            return True
        if type(node) is cst.Attribute and any(hint in node.attr.value.lower() for hint in _DISABLING_HINTS):
            return True
        stack.extend(children(node))
    return False


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """A node's child nodes read from its dataclass fields: `node.children` and `node.visit`
    rebuild the tree as they go and cost far more."""
    for item in dataclasses.fields(node):
        value = getattr(node, item.name)
        if isinstance(value, cst.CSTNode):
            yield value
        elif type(value) is tuple or type(value) is list:
            yield from (element for element in value if isinstance(element, cst.CSTNode))


def with_grad_effect(node: cst.With) -> Optional[bool]:
    """The grad mode a `with` statement's body runs under, None when it does not set one."""
    return _combined(grad_effect(item.item) for item in node.items)


def _first_param_name(function: cst.FunctionDef) -> str | None:
    params = function.params.posonly_params or function.params.params
    return params[0].name.value if params else None


def is_autograd_function_class(node: cst.ClassDef) -> bool:
    """`class F(torch.autograd.Function)`, `(Function)`, `(InplaceFunction)`: its forward and
    backward run with grad recording off."""
    for base in node.bases:
        name = dotted_name(base.value)
        if name is not None and name.rpartition(".")[2].endswith("Function"):
            return True
    return False


def function_grad_effect(function: cst.FunctionDef, owner: cst.ClassDef | None) -> Optional[bool]:
    """Grad mode a function body runs under by construction: decorated with `@torch.no_grad()`
    and the like, or a custom autograd Function's forward/backward (`ctx` first)."""
    if owner is not None and is_autograd_function_class(owner):
        return False
    if _first_param_name(function) == "ctx":
        return False
    return _combined(grad_effect(decorator.decorator) for decorator in function.decorators)


def statement_grad_switch(node: cst.Expr) -> Optional[bool]:
    """`torch.set_grad_enabled(False)` (or True) written as a plain statement."""
    call = node.value
    if type(call) is not cst.Call:
        return None
    name = dotted_name(call.func)
    if name is None or name.rpartition(".")[2] != "set_grad_enabled":
        return None
    return grad_effect(call)


def is_backward_call(call: cst.Call) -> bool:
    """`loss.backward()`, `scaler.scale(loss).backward()`, `torch.autograd.grad(...)`,
    `torch.autograd.backward(...)`."""
    func = call.func
    if type(func) is cst.Attribute and func.attr.value == "backward":
        return True
    name = dotted_name(func)
    return name is not None and (name.endswith("autograd.grad") or name.endswith("autograd.backward"))


def _combined(effects: Iterable[Optional[bool]]) -> Optional[bool]:
    """Several grad-mode switches on one statement: any that disables grad wins (the body
    runs without it), else any that enables it, else None (no effect)."""
    effect = None
    for one in effects:
        if one is False:
            return False
        if one is True:
            effect = True
    return effect
