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


def with_keyword(call: cst.Call, name: str, value: str) -> cst.Call:
    """`call` with `name=value` appended. A one-argument-per-line call keeps its layout: the
    new argument inherits the trailing comma (and the newline before `)`), and the old last
    argument gets the layout of the first (without the comment that may follow `(`)."""
    new_arg = cst.Arg(
        keyword=cst.Name(name),
        value=cst.parse_expression(value),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    args = list(call.args)
    last = args[-1] if args else None
    if last is not None and type(last.comma) is cst.Comma:
        new_arg = new_arg.with_changes(comma=last.comma)
        layout = call.whitespace_before_args
        if type(layout) is cst.ParenthesizedWhitespace:
            layout = layout.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
        args[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=layout))
    return call.with_changes(args=[*args, new_arg])
