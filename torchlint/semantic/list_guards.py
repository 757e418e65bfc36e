"""A parameter that is a tensor or a list of tensors, and the guards that tell which.

Some functions take either one tensor or a list of per-scale (or per-image) tensors and
branch on which they were given: `if isinstance(x, list):`, or — when the list is the
multi-element case — `if len(x) > 1:` with a body that walks the list element by element
(`for a, b in zip(x, y)`). A factory called under such a guard makes a value for the list
form: whatever it meets through `x` there is a Python list (or its elements, one at a
time), not the device tensor `x` is in the other form (diffusers' matryoshka scheduler
step builds one CPU value per scale under `len(model_output) > 1`).

`len(x) > 1` alone is no such guard: a tensor's `len` is its first dimension, so the
function must show the dispatch itself by iterating `x` under the same test elsewhere.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from torchlint.static.walker import iter_nodes


def made_for_list_form(function: cst.FunctionDef, origin: cst.CSTNode, name: str) -> bool:
    """Whether the factory call `origin` in `function` runs only where the parameter `name`
    is a list: under `isinstance(name, list/tuple)`, or under `len(name) > 1` in a function
    that iterates `name` under that test elsewhere."""
    tests = [c for guard in _guards(function.body.body, origin) or () for c in _conjuncts(guard)]
    if any(_is_list_check(test, name) for test in tests):
        return True
    if not any(_is_many_check(test, name) for test in tests):
        return False
    return any(
        type(node) is cst.If
        and any(_is_many_check(c, name) for c in _conjuncts(node.test))
        and _iterates(node.body, name)
        for node in iter_nodes(function.body)
    )


def _guards(statements, origin: cst.CSTNode) -> Optional[list[cst.BaseExpression]]:
    """The tests of the `if` bodies (not `else`/`elif` arms' negations) that hold `origin`;
    None when no statement of the list holds it."""
    for statement in statements:
        if not _holds(statement, origin):
            continue
        if type(statement) is cst.If:
            return _if_guards(statement, origin)
        for block in _blocks(statement):
            found = _guards(block, origin)
            if found is not None:
                return found
        return []
    return None


def _if_guards(node: cst.If, origin: cst.CSTNode) -> list[cst.BaseExpression]:
    if _holds(node.body, origin):
        return [node.test, *(_guards(node.body.body, origin) or ())]
    orelse = node.orelse
    if type(orelse) is cst.If:
        return _if_guards(orelse, origin)
    if type(orelse) is cst.Else:
        return _guards(orelse.body.body, origin) or []
    return []  # in the test itself


def _blocks(statement: cst.CSTNode):
    """The statement lists directly under a compound statement other than `if`."""
    kind = type(statement)
    parts = []
    if kind in (cst.For, cst.While, cst.With, cst.Try):
        parts.append(statement.body)
        orelse = getattr(statement, "orelse", None)
        if orelse is not None:
            parts.append(orelse.body)
        if kind is cst.Try:
            parts.extend(handler.body for handler in statement.handlers)
            if statement.finalbody is not None:
                parts.append(statement.finalbody.body)
    return [part.body for part in parts if type(part) is cst.IndentedBlock]


def _holds(node: cst.CSTNode, target: cst.CSTNode) -> bool:
    return any(n is target for n in iter_nodes(node))


def _conjuncts(test: cst.BaseExpression):
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        yield from _conjuncts(test.left)
        yield from _conjuncts(test.right)
    else:
        yield test


def _is_name(node: cst.BaseExpression, name: str) -> bool:
    return type(node) is cst.Name and node.value == name


def _is_list_check(test: cst.BaseExpression, name: str) -> bool:
    """`isinstance(name, list)`, `isinstance(name, (list, tuple))`."""
    if type(test) is not cst.Call or not _is_name(test.func, "isinstance") or len(test.args) != 2:
        return False
    if not _is_name(test.args[0].value, name):
        return False
    kinds = test.args[1].value
    elements = [e.value for e in kinds.elements] if type(kinds) is cst.Tuple else [kinds]
    return bool(elements) and all(type(e) is cst.Name and e.value in ("list", "tuple", "List", "Tuple") for e in elements)


def _is_many_check(test: cst.BaseExpression, name: str) -> bool:
    """`len(name) > 1` or `len(name) >= 2`."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return False
    left = test.left
    if type(left) is not cst.Call or not _is_name(left.func, "len") or len(left.args) != 1 or not _is_name(left.args[0].value, name):
        return False
    target = test.comparisons[0]
    bound = target.comparator
    if type(bound) is not cst.Integer:
        return False
    operator = type(target.operator)
    return (operator is cst.GreaterThan and bound.value == "1") or (operator is cst.GreaterThanEqual and bound.value == "2")


def _iterates(body: cst.CSTNode, name: str) -> bool:
    """`for _ in name`, `[... for _ in name]`, or `zip(..., name, ...)` in `body`."""
    for node in iter_nodes(body):
        kind = type(node)
        if kind in (cst.For, cst.CompFor) and _is_name(node.iter, name):
            return True
        if kind is cst.Call and _is_name(node.func, "zip") and any(_is_name(arg.value, name) for arg in node.args):
            return True
    return False
