"""Small helpers for reading calls, shared by the built-in rules (not part of the engine)."""

from __future__ import annotations

import libcst as cst


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional(call: cst.Call) -> list[cst.Arg]:
    return [arg for arg in call.args if arg.keyword is None and not arg.star]


def has_star_args(call: cst.Call) -> bool:
    """`*args` or `**kwargs` may carry any argument, so rules about missing ones stay quiet."""
    return any(arg.star for arg in call.args)


def argument(call: cst.Call, name: str, position: int) -> cst.Arg | None:
    """The argument bound to parameter `name`, passed by keyword or at `position` (0-based)."""
    found = keyword(call, name)
    if found is not None:
        return found
    args = positional(call)
    return args[position] if position < len(args) else None
