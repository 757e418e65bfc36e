"""Helpers shared by the numerics, loss-target and data-loading rules (TL107, TL108, TL202,
TL401, TL402, TL405): number literals, and a small local taint environment.

``LocalTags`` follows what a few local names hold, in source order, one scope at a time
(a function, a class body or the module). A binding remembers the suite path it was made in
(the ids of the `if`/`for`/`while`/`try` blocks around it); a use sees the binding only when
that path is a prefix of its own, so `if gpu: x = x.cuda()` does not taint a later `x`
outside the `if`. Any other assignment of the name, anywhere, replaces the binding.
Unknown values are never tainted: precision before recall.
"""

from __future__ import annotations

from typing import Any, Optional

import libcst as cst

from torchlint.rule import Rule

from ._bindings import BindingEvents, innermost_scope_index, suite_path

#: What opens a scope here (type names: libcst must not load at import time). Unlike the
#: probability dataflow, a lambda's parameters shadow the names around it.
_SCOPES = frozenset({"FunctionDef", "ClassDef", "Module", "Lambda"})


def number_value(node: cst.BaseExpression) -> Optional[float]:
    """The value of an int or float literal (`1`, `1.0`, `1.`), else None."""
    name = type(node).__name__
    if name not in ("Integer", "Float") or node.lpar:
        return None
    try:
        return float(node.value.replace("_", ""))
    except ValueError:
        return None


def is_one(node: cst.BaseExpression) -> bool:
    return number_value(node) == 1.0


def only_positional(call: cst.Call, count: int) -> bool:
    """Exactly `count` plain positional arguments: no keywords (`out=`), no `*args`."""
    return len(call.args) == count and all(arg.keyword is None and not arg.star for arg in call.args)


def method_name(call: cst.Call) -> Optional[str]:
    func = call.func
    return func.attr.value if type(func).__name__ == "Attribute" else None


class LocalTags(BindingEvents, Rule):
    """A rule base that keeps `name -> (tag, suite path)` per scope. Subclasses decide what
    an expression's tag is (`tag_of`) and read names back with `lookup`."""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._envs: dict[int, dict[str, tuple[Any, tuple[int, ...]]]] = {}

    # -- what a subclass provides -----------------------------------------------------------
    def tag_of(self, expr: cst.BaseExpression) -> Any:
        """The tag an assignment of `expr` gives its target; None for untracked values."""
        return None

    # -- scopes and paths -------------------------------------------------------------------
    def _scope_index(self) -> int:
        return innermost_scope_index(self.ctx.ancestors, _SCOPES)

    def path(self) -> tuple[int, ...]:
        """The ids of the branch blocks between the current scope and the current node."""
        return suite_path(self.ctx.ancestors, self._scope_index())

    def _env(self) -> dict[str, tuple[Any, tuple[int, ...]]]:
        if not self.ctx.ancestors:
            return self._envs.setdefault(0, {})
        return self._envs.setdefault(id(self.ctx.ancestors[self._scope_index()]), {})

    def bind(self, name: str, tag: Any) -> None:
        self._env()[name] = (tag, self.path())

    def lookup(self, name: str) -> Any:
        """The tag of `name` here, when its binding is visible from the current suite path."""
        entry = self._env().get(name)
        if entry is None:
            return None
        tag, bound_at = entry
        return tag if self.path()[: len(bound_at)] == bound_at else None

    def bind_target(self, target: cst.BaseExpression, tag: Any) -> None:
        kind = type(target).__name__
        if kind == "Name":
            self.bind(target.value, tag)
        elif kind in ("Tuple", "List"):
            for element in target.elements:
                self.bind_target(element.value, None)
        elif kind == "StarredElement":
            self.bind_target(target.value, None)

    # -- bindings seen during the walk (assignments come from BindingEvents) ---------------
    def value_of(self, expr: cst.BaseExpression) -> Any:
        return self.tag_of(expr)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.bind(node.name.value, None)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.bind(node.name.value, None)
