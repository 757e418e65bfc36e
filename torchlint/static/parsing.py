"""libcst's parse of a file, without libcst checking each node its own parser made.

libcst validates every node it constructs (`CSTNode.__post_init__` calls `_validate`: is this
whitespace only whitespace, does this name match the identifier pattern, ...). That keeps trees
built by hand sound; a tree libcst's parser builds from source text is sound by construction,
and libcst's own comment there says as much ("it might make more sense to move validation work
into the visitor, which would allow us to avoid validating the tree when parsing a file"). On
timm's 304 files validation is about an eighth of the parse. So the files torchlint checks are
parsed with it off; the tree is the same node for node (tests/test_parsing.py), and nodes built
by hand (a fix's replacement code) are validated as always: the switch is on only while a
parse runs.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator

import libcst as cst
from libcst._nodes.base import CSTNode

_lock = threading.Lock()
_parsing = 0  # parses under way (the language server's worker and a test may overlap)
_validating = CSTNode.__post_init__


def _no_validation(self: CSTNode) -> None:
    pass


@contextlib.contextmanager
def _without_validation() -> Iterator[None]:
    global _parsing
    with _lock:
        _parsing += 1
        CSTNode.__post_init__ = _no_validation
    try:
        yield
    finally:
        with _lock:
            _parsing -= 1
            if not _parsing:
                CSTNode.__post_init__ = _validating


def parse_module(text: str) -> cst.Module:
    """`libcst.parse_module(text)`, without validating the nodes the parser makes."""
    with _without_validation():
        return cst.parse_module(text)
