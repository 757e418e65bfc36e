"""Every way a statement binds a name, turned into one call: `bind_target(target, value)`;
and where a binding is visible: its scope and the suite path it was made under.

Shared by the rules that follow values through local names (the probability dataflow of
TL101's family, `_numerics.LocalTags`). They differ in what a value is (`value_of`), in how
they store it (`bind_target`) and in what opens a scope, not in which syntax binds a name
or how branches hide a binding.
"""

from __future__ import annotations

from typing import Any, Sequence

import libcst as cst

# Type-name sets rather than tuples of libcst classes: libcst must not load at import time.
_BLOCKS = frozenset({"IndentedBlock", "SimpleStatementSuite"})
#: Blocks that always run when their statement does: they do not make a branch.
_TRANSPARENT_BLOCK_PARENTS = frozenset({"With", "FunctionDef", "ClassDef"})


def innermost_scope_index(ancestors: Sequence[cst.CSTNode], scopes: frozenset[str]) -> int:
    """Index in `ancestors` of the nearest node whose type is named in `scopes` (0: the module)."""
    for index in range(len(ancestors) - 1, -1, -1):
        if type(ancestors[index]).__name__ in scopes:
            return index
    return 0


def suite_path(ancestors: Sequence[cst.CSTNode], scope_index: int) -> tuple[int, ...]:
    """The ids of the branch blocks (`if`/`for`/`while`/`try` bodies) between the scope at
    `scope_index` and the current node: a binding made under this path is visible from a
    use whose own path starts with it."""
    return tuple(
        id(ancestors[index])
        for index in range(scope_index + 1, len(ancestors))
        if type(ancestors[index]).__name__ in _BLOCKS
        and type(ancestors[index - 1]).__name__ not in _TRANSPARENT_BLOCK_PARENTS
    )


class BindingEvents:
    def value_of(self, expr: cst.BaseExpression) -> Any:
        """What assigning `expr` binds; None when nothing is known about it."""
        raise NotImplementedError

    def bind_target(self, target: cst.BaseExpression, value: Any) -> None:
        raise NotImplementedError

    # leave_ for assignments: the value's own nodes have been visited by then.
    def leave_Assign(self, node: cst.Assign) -> None:
        value = self.value_of(node.value)
        for target in node.targets:
            self.bind_target(target.target, value)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.bind_target(node.target, self.value_of(node.value) if node.value is not None else None)

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        self.bind_target(node.target, None)

    def leave_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.bind_target(node.target, self.value_of(node.value))

    def visit_For(self, node: cst.For) -> None:
        self.bind_target(node.target, None)

    def leave_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self.bind_target(node.asname.name, None)
