"""While an open document does not parse, the server keeps its last good findings next to the
syntax error (moved with the edit, dropped where their lines were edited), as ruff does."""

from __future__ import annotations

from pathlib import Path

from torchlint.lsp.last_good import _line_map
from torchlint.lsp.linting import Project

GOOD = """import torch; DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
import torch.nn as nn

state = torch.load("a.pt", weights_only=True)
model = nn.Linear(4, 2)
model = torch.load("b.pt", weights_only=True)
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
    typing = GOOD.replace("state =", "y = torch.softmax(\nstate =").replace('model = torch.load("b.pt"', 'model = torch.load("c.pt"')
    found = project.check({key: typing}).findings[key]
    assert any(f.code == "TL000" for f in found)
    moved = [f for f in found if f.code == "TL301"]
    assert [f.location.line for f in moved] == [5]  # line 4 moved down one; line 6 was edited: dropped
    assert all(f.fix is None for f in moved)

    # Once it parses again the real findings replace the carried ones.
    fixed = typing.replace("y = torch.softmax(\n", "y = 1\n")
    assert codes_and_lines(project.check({key: fixed}).findings[key]) == [("TL301", 5), ("TL301", 7)]


def test_a_load_of_the_off_by_default_part_stays_hidden_while_the_file_does_not_parse(tmp_path):
    # Nothing in this file says it runs on the CPU too: its load is TL303's, off by default.
    # The carried-over findings are judged by the facts of their lines, moved with them.
    hidden = 'import torch  # trained on cuda\n\nstate = torch.load("a.pt", weights_only=True)\n'
    path = tmp_path / "train.py"
    path.write_text(hidden)
    project = Project(tmp_path, None, isolated=True)
    key = str(path.resolve())
    assert project.check({key: hidden}).findings[key] == []
    typing = hidden.replace("state =", "y = torch.softmax(\nstate =")
    found = project.check({key: typing}).findings[key]
    assert [f.code for f in found] == ["TL000"]


def test_a_document_that_never_parsed_shows_only_its_syntax_error(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("x = (\n")
    project = Project(tmp_path, None, isolated=True)
    key = str(path.resolve())
    assert [f.code for f in project.check({key: "x = (\n"}).findings[key]] == ["TL000"]


def test_line_map_follows_insertions_and_deletions():
    mapping = _line_map("a\nb\nc\nd\n", "a\nnew\nb\nd\n")
    assert mapping == {1: 1, 2: 3, 4: 4}


def notebook(*cells: str) -> str:
    import json

    return json.dumps({"cells": [{"cell_type": "code", "source": text, "metadata": {}, "outputs": [], "execution_count": None}
                                 for text in cells],
                       "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5})


MODEL_CELL = """import torch
import torch.nn as nn
import torch.nn.functional as F

class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return F.softmax(self.fc(x), dim=1)

state = torch.load("a.pt", weights_only=True); DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
"""
TRAIN_CELL = """model = Classifier()
loss = nn.CrossEntropyLoss()(model(torch.randn(3, 4)), torch.tensor([0, 1, 1]))
"""


def codes_by_cell(found) -> list[tuple[int, str, int]]:
    return sorted((f.cell, f.code, f.location.line) for f in found)


def test_a_notebook_cell_being_typed_keeps_its_findings_and_those_of_the_cells_after_it(tmp_path):
    path = tmp_path / "train.ipynb"
    good = notebook(MODEL_CELL, TRAIN_CELL)
    path.write_text(good)
    project = Project(tmp_path, None, isolated=True)
    key = str(path.resolve())
    assert codes_by_cell(project.check({key: good}).findings[key]) == [(1, "TL301", 13), (2, "TL101", 2)]

    # A line typed at the top of the first cell, not finished: that cell does not parse.
    typing = notebook("y = torch.softmax(\n" + MODEL_CELL, TRAIN_CELL)
    found = project.check({key: typing}).findings[key]
    # The model the second cell uses is still known; the first cell keeps its finding, moved.
    assert codes_by_cell(found) == [(1, "TL000", 1), (1, "TL301", 14), (2, "TL101", 2)]
    assert all(f.fix is None for f in found if f.cell == 1 and f.code != "TL000")

    # Its line edited as well: the finding there may no longer hold, and goes.
    edited = notebook("y = torch.softmax(\n" + MODEL_CELL.replace('"a.pt"', '"b.pt"'), TRAIN_CELL)
    assert codes_by_cell(project.check({key: edited}).findings[key]) == [(1, "TL000", 1), (2, "TL101", 2)]

    # Parsed again: the real findings.
    fixed = notebook("y = 1\n" + MODEL_CELL, TRAIN_CELL)
    assert codes_by_cell(project.check({key: fixed}).findings[key]) == [(1, "TL301", 14), (2, "TL101", 2)]
