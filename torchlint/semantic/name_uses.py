"""Every use of every plain name in a scope, indexed in one walk of the scope.

Questions like "which keys are read off `x`?" or "is every later read of `x` inside a numpy
call?" were answered by walking the whole scope once per question: at module level that is a
walk of the module for each `torch.load` line, quadratic in the file (1,000 loads took over a
minute). The index answers each of them from the uses of that one name.

Uses are kept in the order a pre-order walk of the scope meets them (`iter_nodes`), which is
source order, so "from this assignment to the next one" is a slice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from torchlint.static.walker import iter_nodes


@dataclass
class NameUse:
    """One occurrence of the name (``kind`` "name": a `Name` node, ``numpy_calls`` being how
    many numpy calls hold it in their arguments) or one assignment to it (``kind`` "assign":
    ``node`` is the `Assign`, ``value_uses`` the uses inside its value)."""

    kind: str
    node: cst.CSTNode
    numpy_calls: int = 0
    value_uses: list["NameUse"] = field(default_factory=list)
    name: str = ""


@dataclass
class ScopeUses:
    #: name -> its uses and assignments, in source order
    uses: dict[str, list[NameUse]] = field(default_factory=dict)
    #: name -> string keys read off it: `x["k"]`, `"k" in x`, `x.get("k")`
    keys: dict[str, set[str]] = field(default_factory=dict)
    #: name -> (call, arg) for each call of a plain name that passes it as an argument
    passed: dict[str, list[tuple[cst.Call, cst.Arg]]] = field(default_factory=dict)

    def after(self, assign: cst.Assign, name: str) -> list[NameUse]:
        """The uses of `name` from `assign` (excluded) to the next assignment of `name`
        (included, with the uses in its value, which still read this binding)."""
        uses = self.uses.get(name, [])
        start = next((i for i, use in enumerate(uses) if use.node is assign), None)
        if start is None:
            return []
        found: list[NameUse] = []
        for use in uses[start + 1:]:
            if use.kind == "assign":
                found.extend(use.value_uses)
                break
            found.append(use)
        return found


def scope_uses(ctx: Any, scope: cst.CSTNode) -> ScopeUses:
    """The index of `scope` (a function or the module) in the file `ctx` checks: built on
    the first question, then kept for the file's check."""
    key = ("scope-uses", id(scope))
    held = ctx.memo.get(key)
    if held is None or held[0] is not scope:
        held = ctx.memo[key] = (scope, _index(scope, lambda call: is_numpy_call(ctx, call)))
    return held[1]


def module_functions(ctx: Any) -> dict[str, cst.FunctionDef]:
    """The functions defined at the top of the file's module, by name."""
    held = ctx.memo.get("module-functions")
    if held is None or held[0] is not ctx.module:
        functions = {statement.name.value: statement for statement in ctx.module.body if type(statement) is cst.FunctionDef}
        held = ctx.memo["module-functions"] = (ctx.module, functions)
    return held[1]


def is_numpy_call(ctx: Any, call: cst.BaseExpression) -> bool:
    """`torch.from_numpy(...)` or any `numpy.*` call (through the file's import aliases)."""
    if type(call) is not cst.Call:
        return False
    qualname = ctx.qualname(call.func) or ""
    return qualname == "torch.from_numpy" or qualname.startswith("numpy.")


def _index(scope: cst.CSTNode, numpy_call: Any) -> ScopeUses:
    index = ScopeUses()
    # Per Name node: how many numpy calls hold it in an argument. A numpy call's arguments
    # are marked when the call is met; pre-order meets the call before its arguments.
    inside_numpy: dict[int, int] = {}
    # The Assign whose value a node is in, to gather an assignment's value uses.
    value_of: dict[int, NameUse] = {}
    for node in iter_nodes(scope):
        kind = type(node)
        owner = value_of.get(id(node))
        if kind is cst.Name:
            use = NameUse("name", node, inside_numpy.get(id(node), 0))
            if owner is not None and owner.name == node.value:
                owner.value_uses.append(use)
            index.uses.setdefault(node.value, []).append(use)
        elif kind is cst.Assign:
            for target in node.targets:
                if type(target.target) is cst.Name:
                    assign = NameUse("assign", node, name=target.target.value)
                    index.uses.setdefault(target.target.value, []).append(assign)
                    for inner in iter_nodes(node.value):
                        value_of[id(inner)] = assign
        elif kind is cst.Call:
            if numpy_call(node):
                for arg in node.args:
                    for inner in iter_nodes(arg.value):
                        if type(inner) is cst.Name:
                            inside_numpy[id(inner)] = inside_numpy.get(id(inner), 0) + 1
            func = node.func
            if type(func) is cst.Name:
                for arg in node.args:
                    if type(arg.value) is cst.Name:
                        index.passed.setdefault(arg.value.value, []).append((node, arg))
            elif type(func) is cst.Attribute and func.attr.value == "get" and node.args and type(func.value) is cst.Name:
                _add_key(index, func.value.value, literal_string(node.args[0].value))
        elif kind is cst.Subscript and type(node.value) is cst.Name:
            _add_key(index, node.value.value, subscript_key(node))
        elif kind is cst.Comparison and len(node.comparisons) == 1 and type(node.comparisons[0].operator) is cst.In:
            holder = node.comparisons[0].comparator
            if type(holder) is cst.Name:
                _add_key(index, holder.value, literal_string(node.left))
        if owner is not None:
            value_of.pop(id(node), None)
    return index


def _add_key(index: ScopeUses, name: str, key: str | None) -> None:
    if key is not None:
        index.keys.setdefault(name, set()).add(key)


def subscript_key(node: cst.Subscript) -> str | None:
    """The key of `x["k"]`, or None."""
    if len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
        return None
    return literal_string(node.slice[0].slice.value)


def literal_string(node: cst.BaseExpression) -> str | None:
    """The value of a plain string literal, or None."""
    if type(node) is cst.SimpleString:
        value = node.evaluated_value
        return value if type(value) is str else None
    return None
