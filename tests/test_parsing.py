"""Files are parsed without libcst validating each node its parser made
(torchlint/static/parsing.py): the same trees, and hand-built nodes still validated."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from torchlint.static.parsing import parse_module

ROOT = Path(__file__).resolve().parents[1]


def test_the_trees_are_libcsts_own_node_for_node():
    files = sorted((ROOT / "torchlint").rglob("*.py")) + sorted((ROOT / "plugins").rglob("*.py"))
    for path in files[:120]:
        text = path.read_text(encoding="utf-8")
        ours = parse_module(text)
        assert ours.deep_equals(cst.parse_module(text)), path
        assert ours.code == text


def test_syntax_errors_are_still_refused():
    for broken in ("def f(:\n", "x = (\n", "return = 1\n", "f(**a, *b)\n", "class C(\n"):
        with pytest.raises(cst.ParserSyntaxError):
            parse_module(broken)


def test_nodes_built_by_hand_are_still_validated():
    parse_module("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
