"""Autofix: rules describe fixes as libcst node replacements; the engine turns them into text
edits (plain JSON, cacheable) and applies them atomically, re-parsing every result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:
    import libcst as cst

SAFE = "safe"
UNSAFE = "unsafe"


@dataclass(frozen=True)
class NodeFix:
    """What a rule hands to `report(..., fix=...)`: replace each old node with a new node (or
    with source text). `applicability` is "safe" (never changes behaviour) or "unsafe"."""

    message: str
    applicability: str
    replacements: tuple[tuple["cst.CSTNode", Union["cst.CSTNode", str]], ...]
