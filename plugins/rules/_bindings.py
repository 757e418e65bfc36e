"""Every way a statement binds a name, turned into one call: `bind_target(target, value)`.

Shared by the rules that follow values through local names (the probability dataflow of
TL101's family, `_numerics.LocalTags`). They differ in what a value is (`value_of`) and in
how they store it (`bind_target`), not in which syntax binds a name.
"""

from __future__ import annotations

from typing import Any

import libcst as cst


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
