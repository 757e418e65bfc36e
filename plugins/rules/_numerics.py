"""Helpers shared by the numerics, loss-target and data-loading rules (TL107, TL108, TL202,
TL401, TL402, TL405): number literals, and a small local taint environment.

``LocalTags`` follows what a few local names hold, in source order, one scope at a time
(a function, a class body or the module). A binding remembers the suite path it was made in
(the ids of the `if`/`for`/`while`/`try` blocks around it); a use sees the binding only when
that path is a prefix of its own, so `if gpu: x = x.cuda()` does not taint a later `x`
outside the `if`. A binding in the other arm of the same `if` is invisible (`else: x = ...`
does not see `if ...: x = ...`, it sees the binding before the `if`); any other assignment
of the name, anywhere, replaces the binding. Unknown values are never tainted: precision
before recall.
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
        #: scope id -> name -> its bindings in source order: (tag, suite path, arm of each block)
        self._envs: dict[int, dict[str, list[tuple[Any, tuple[int, ...], tuple]]]] = {}

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

    def _arms(self) -> tuple:
        """For each block of `path()`: (id of its `if`, 0 for the body or 1 for the else), or
        None for a block that is no arm of an `if` (a loop, a `try`, an `elif`'s)."""
        ancestors = self.ctx.ancestors
        path = set(self.path())
        arms = []
        for index in range(self._scope_index() + 1, len(ancestors)):
            if id(ancestors[index]) not in path:
                continue
            parent = ancestors[index - 1]
            kind = type(parent).__name__
            if kind == "If" and parent.body is ancestors[index]:
                arms.append((id(parent), 0))
            elif kind == "Else" and index >= 2 and type(ancestors[index - 2]).__name__ == "If":
                arms.append((id(ancestors[index - 2]), 1))
            else:
                arms.append(None)
        return tuple(arms)

    def _env(self) -> dict[str, list[tuple[Any, tuple[int, ...], tuple]]]:
        if not self.ctx.ancestors:
            return self._envs.setdefault(0, {})
        return self._envs.setdefault(id(self.ctx.ancestors[self._scope_index()]), {})

    def bind(self, name: str, tag: Any) -> None:
        self._env().setdefault(name, []).append((tag, self.path(), self._arms()))

    def lookup(self, name: str) -> Any:
        """The tag of `name` here: its latest binding visible from the current suite path,
        skipping those in the other arm of an `if` this use is in; None when the latest
        binding may or may not have run."""
        entries = self._env().get(name)
        if not entries:
            return None
        path = self.path()
        arms = None
        for tag, bound_at, bound_arms in reversed(entries):
            if path[: len(bound_at)] == bound_at:
                return tag
            arms = self._arms() if arms is None else arms
            split = next(i for i in range(len(bound_at)) if i >= len(path) or path[i] != bound_at[i])
            here = arms[split] if split < len(arms) else None
            there = bound_arms[split] if split < len(bound_arms) else None
            if here is None or there is None or here[0] != there[0] or here[1] == there[1]:
                return None  # after the block that bound it: it may or may not have run
        return None

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

    def param_tag(self, param: cst.Param) -> Any:
        """The tag a parameter starts with (from its annotation, say); None by default."""
        return None

    def visit_Param(self, node: cst.Param) -> None:
        self.bind(node.name.value, self.param_tag(node))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.bind(node.name.value, None)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.bind(node.name.value, None)
