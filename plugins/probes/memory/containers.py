"""Who keeps the tensors: the list, dict or attribute of the user's code that holds them, and
the lines that add to it.

Asked rarely (once the probe has seen kept tensors pile up), from inside the program's loop:
the user's frames on the stack are searched for a container holding the tensors (their
locals, attributes of ``self``, a script's globals), and the code of those frames for the
calls that add to it (``losses.append(...)``, ``self.history.extend(...)``), read from the
bytecode, so the line is exact without parsing the source.
"""

from __future__ import annotations

import dis
from collections import deque
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any, Callable

from torchlint.probe import USER, Site, frame_locals

#: Items of a container looked at, at most (a dataset held in a list is not read through).
ITEMS = 100_000
#: Methods that add to a container.
ADDING = ("append", "extend", "insert", "appendleft", "add", "setdefault", "update")
_LOADS = ("LOAD_FAST", "LOAD_NAME", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_FAST_CHECK", "LOAD_FAST_BORROW")
_ATTRIBUTES = ("LOAD_ATTR", "LOAD_METHOD")


@dataclass
class Holder:
    """A container of the user's code holding some of the tensors."""

    expression: str  # `losses`, `self.history`
    count: int  # how many of the tensors it holds
    length: int  # its length
    adds: list[Site]  # lines that add to it, in the frames on the stack


def find_holders(ids: set[int], frame: FrameType | None, verdict: Callable[[str], int], absolute: Callable[[str], str]) -> list[Holder]:
    """The containers in the user's frames (innermost first) that hold tensors with these
    ``ids``, most first."""
    frames = []
    while frame is not None:
        if verdict(frame.f_code.co_filename) == USER:
            frames.append(frame)
        frame = frame.f_back
    found: dict[int, tuple[str, Any, int]] = {}
    for user_frame in frames:
        for name, value in frame_locals(user_frame).items():
            _consider(found, name, value, ids)
            if name == "self" and hasattr(value, "__dict__"):
                for attribute, inner in list(vars(value).items()):
                    _consider(found, f"self.{attribute}", inner, ids)
    holders = []
    codes = [(f.f_code, f.f_code.co_filename) for f in frames]
    for expression, value, count in sorted(found.values(), key=lambda item: -item[2]):
        adds = []
        for code, filename in codes:
            for line in adding_lines(code, expression):
                site = Site(absolute(filename), line, code.co_name)
                if site not in adds:
                    adds.append(site)
        holders.append(Holder(expression, count, len(value), adds))
    return holders


def _consider(found: dict[int, tuple[str, Any, int]], name: str, value: Any, ids: set[int]) -> None:
    if not isinstance(value, (list, tuple, dict, deque, set)) or id(value) in found or not value:
        return
    count = _count(value, ids, depth=2)
    if count:
        found[id(value)] = (name, value, count)


def _count(value: Any, ids: set[int], depth: int) -> int:
    items = value.values() if isinstance(value, dict) else value
    count = 0
    for index, item in enumerate(items):
        if index >= ITEMS:
            break
        if id(item) in ids:
            count += 1
        elif depth > 1 and isinstance(item, (list, tuple, dict)):
            count += _count(item, ids, depth - 1)
    return count


def adding_lines(code: CodeType, expression: str) -> list[int]:
    """Lines of ``code`` (and the functions, comprehensions and lambdas inside it) that call
    one of ADDING on ``expression`` (`losses`, `self.history`)."""
    parts = expression.split(".")
    lines: list[int] = []
    try:
        instructions = list(dis.get_instructions(code))
    except Exception:
        return lines
    for index, instruction in enumerate(instructions):
        if instruction.opname not in _ATTRIBUTES or _attribute(instruction) not in ADDING:
            continue
        if _loads(instructions, index - 1, parts):
            line = _line(instruction)
            if line is not None and line not in lines:
                lines.append(line)
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            lines.extend(line for line in adding_lines(constant, expression) if line not in lines)
    return lines


def _attribute(instruction: dis.Instruction) -> str:
    value = instruction.argval
    return value if isinstance(value, str) else str(instruction.argrepr).split(" ")[0]


def _loads(instructions: list[dis.Instruction], end: int, parts: list[str]) -> bool:
    """Whether the instructions ending at ``end`` load ``a.b.c`` (``parts``)."""
    for position, part in enumerate(reversed(parts)):
        index = end - position
        if index < 0:
            return False
        instruction = instructions[index]
        first = position == len(parts) - 1
        names = _LOADS if first else _ATTRIBUTES
        if instruction.opname not in names:
            return False
        name = instruction.argval if first else _attribute(instruction)
        if name != part:
            return False
    return True


def _line(instruction: dis.Instruction) -> int | None:
    positions = getattr(instruction, "positions", None)
    if positions is not None and positions.lineno is not None:
        return positions.lineno
    return instruction.starts_line if isinstance(instruction.starts_line, int) else None


def find_name(target: Any, frame: FrameType | None, verdict: Callable[[str], int]) -> str | None:
    """The name a user frame on the stack gives ``target`` (`total_loss`, `self.running`)."""
    while frame is not None:
        if verdict(frame.f_code.co_filename) == USER:
            for name, value in frame_locals(frame).items():
                if value is target:
                    return name
                if name == "self" and hasattr(value, "__dict__"):
                    for attribute, inner in list(vars(value).items()):
                        if inner is target:
                            return f"self.{attribute}"
        frame = frame.f_back
    return None
