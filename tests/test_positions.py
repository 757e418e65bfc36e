"""Positions computed statement by statement must equal libcst's whole-file PositionProvider."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from torchlint.static.positions import Positions

SOURCES = [
    "import torch\nx = torch.load(p)\n",
    "#!/usr/bin/env python\n# header comment\n\nimport torch\n\n\n@decorator(\n    1)\n# between\ndef f(a,\n      b):\n    '''doc\n    string'''\n    return torch.load(a)  # trailing\n\nclass C:\n    def g(self):\n        if x:\n            y = [torch.zeros(3),\n                 torch.load(\n                     q)]\n",
    "import torch\r\nx = 1; y = torch.load(p)\r\nz = (\r\n  torch.load(q))\r\n",
    "if True:\n\tx = torch.load(p)\n\tif y:\n\t\tz = torch.load(q)\n",
    "s = '''multi\nline'''\nt = f'{a!r:>{w}}'; u = torch.load(a)\n# trailing comment at end\n",
]


@pytest.mark.parametrize("source", SOURCES)
def test_statement_positions_match_libcst(source):
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    positions = Positions(module)
    checked = 0
    for statement in module.body:
        for node in _descendants(statement):
            line, column, end_line, end_column = positions.span(node, statement)
            want = expected[node]
            assert (line, column, end_line, end_column) == (
                want.start.line, want.start.column + 1, want.end.line, want.end.column + 1
            ), cst.Module([]).code_for_node(node)
            checked += 1
    assert checked > 5
    assert positions._whole is None  # every node was found by the statement-local path


def _descendants(node):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


def test_a_wrong_statement_hint_still_avoids_whole_file_positions():
    source = "import torch\nx = torch.load(a)\n\ndef f():\n    return torch.load(b)\n"
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    positions = Positions(module)
    first, function = module.body[1], module.body[2]
    call = next(n for n in _descendants(function) if isinstance(n, cst.Call))
    want = expected[call]
    assert positions.span(call, first) == (want.start.line, want.start.column + 1, want.end.line, want.end.column + 1)
    assert positions._whole is None
