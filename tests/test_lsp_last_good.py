"""While an open document does not parse, the server keeps its last good findings next to the
syntax error (moved with the edit, dropped where their lines were edited), as ruff does."""

from __future__ import annotations

from pathlib import Path

from torchlint.lsp.last_good import _line_map
from torchlint.lsp.linting import Project

GOOD = """import torch
import torch.nn as nn

state = torch.load("a.pt", weights_only=True)  # on cuda
model = nn.Linear(4, 2)
other = torch.load("b.pt", weights_only=True)
"""


def codes_and_lines(found) -> list[tuple[str, int]]:
    return sorted((f.code, f.location.line) for f in found)


def test_last_good_findings_stay_beside_the_syntax_error(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(GOOD)
    project = Project(tmp_path, None, isolated=True)
    key = str(path.resolve())
    good = project.check({key: GOOD}).findings[key]
    assert codes_and_lines(good) == [("TL301", 4), ("TL301", 6)]

    # Typing a new line above both, not finished yet; and the second load's line edited.
    typing = GOOD.replace("state =", "y = torch.softmax(\nstate =").replace('other = torch.load("b.pt"', 'other = torch.load("c.pt"')
    found = project.check({key: typing}).findings[key]
    assert any(f.code == "TL000" for f in found)
    moved = [f for f in found if f.code == "TL301"]
    assert [f.location.line for f in moved] == [5]  # line 4 moved down one; line 6 was edited: dropped
    assert all(f.fix is None for f in moved)

    # Once it parses again the real findings replace the carried ones.
    fixed = typing.replace("y = torch.softmax(\n", "y = 1\n")
    assert codes_and_lines(project.check({key: fixed}).findings[key]) == [("TL301", 5), ("TL301", 7)]


def test_a_document_that_never_parsed_shows_only_its_syntax_error(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("x = (\n")
    project = Project(tmp_path, None, isolated=True)
    key = str(path.resolve())
    assert [f.code for f in project.check({key: "x = (\n"}).findings[key]] == ["TL000"]


def test_line_map_follows_insertions_and_deletions():
    mapping = _line_map("a\nb\nc\nd\n", "a\nnew\nb\nd\n")
    assert mapping == {1: 1, 2: 3, 4: 4}
