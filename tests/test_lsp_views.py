"""Pieces of the server's notebook support that need no client: minimal edits, offsets."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("lsprotocol")

from torchlint.lsp.documents import SyncedCell, notebook_json  # noqa: E402
from torchlint.lsp.positions import LineIndex  # noqa: E402
from torchlint.lsp.views import replacement  # noqa: E402
from torchlint.notebook import Notebook  # noqa: E402


@pytest.mark.parametrize(
    "old, new",
    [
        ("a = 1\nb = 2\n", "a = 1\nb = 3\n"),
        ("x\n", "x\ny\n"),
        ("x\ny\n", "y\n"),
        ("abc", "abc"),
        ("", "new"),
        ("same start, then 😀 here\n", "same start, then 😃 here\n"),
        ("a\r\nb\r\n", "a\r\nc\r\nb\r\n"),
        ("a\r\nb", "a\rb"),
        ("a\rb", "a\r\nb"),
    ],
)
def test_one_edit_turns_the_old_text_into_the_new(old, new):
    edits = replacement(old, new, LineIndex(old))
    assert len(edits) == (old != new)
    assert _apply(old, edits) == new


def _apply(text: str, edits) -> str:
    """Apply edits as a client does, lines ended by \\r\\n, \\r or \\n, UTF-16 columns."""
    starts = [0, *(match.end() for match in re.finditer(r"\r\n|\r|\n", text))]

    def offset(position) -> int:
        index, units = starts[position.line], 0
        while units < position.character:
            units += len(text[index].encode("utf-16-le")) // 2
            index += 1
        return index

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


def test_an_edit_in_the_middle_is_small():
    old = "import torch\n" + "x = 1\n" * 50 + "y = torch.log(1 + x)\n" + "z = 2\n" * 50
    new = old.replace("torch.log(1 + x)", "torch.log1p(x)")
    (edit,) = replacement(old, new, LineIndex(old))
    assert edit.range.start.line == edit.range.end.line == 51
    assert len(edit.new_text) <= len("log1p(x)")


def test_offsets_count_utf16_units():
    lines = LineIndex("é😀x\nab\r\ncd")
    assert lines.offset_position(0) == (0, 0)
    assert lines.offset_position(2) == (0, 3)  # é is one unit, 😀 two
    assert lines.offset_position(3) == (0, 4)
    assert lines.offset_position(4) == (1, 0)
    assert lines.offset_position(8) == (2, 0)
    assert LineIndex("é😀x", "utf-8").offset_position(2) == (0, 6)


def test_synced_cells_become_the_notebook_check_reads():
    cells = [
        SyncedCell("cell:1", 1, "# Title", python=False),
        SyncedCell("cell:2", 1, "%matplotlib inline\nimport torch", python=True),
        SyncedCell("cell:3", 1, "print('ünï')", python=True),
    ]
    notebook = Notebook.parse(notebook_json(cells).encode("utf-8"))
    assert [cell.number for cell in notebook.cells] == [2, 3]  # numbered as the client lists them
    assert notebook.cell_lines(2) == ["%matplotlib inline", "import torch"]
    assert "import torch\n" in notebook.source and "%matplotlib" not in notebook.source
