"""A check whose text changed meanwhile can be abandoned (the language server's interrupt),
and abandoning one leaves nothing behind that changes the next check's answer."""

from __future__ import annotations

import pytest

from torchlint.lsp.linting import LintWorkspace, path_key
from torchlint.static.interrupt import CheckInterrupted

TRAIN = """
import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return torch.softmax(self.fc(x), dim=1)

def train(model, loader):
    criterion = nn.CrossEntropyLoss()
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()

def evaluate(model):
    return torch.load("model.pt")

train(Net(), [])
"""


class Countdown:
    """Raises on its `n`-th call; counts the calls."""

    def __init__(self, n: int | None) -> None:
        self.n = n
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        if self.n is not None and self.calls >= self.n:
            raise CheckInterrupted


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    path = tmp_path / "train.py"
    path.write_text(TRAIN)
    return LintWorkspace([tmp_path], isolated=True), path_key(path)


def codes(found, key) -> list[str]:
    return sorted(f.code for f in found.findings[key])


def test_an_interrupt_that_never_fires_changes_nothing(project):
    workspace, key = project
    plain = codes(workspace.check({key: TRAIN}), key)
    never = Countdown(None)
    assert "TL101" in plain
    assert codes(workspace.check({key: TRAIN + "\n"}, never), key) == plain
    # Asked between files, between the top-level statements and between the rules' finish().
    statements = TRAIN.count("\ndef ") + TRAIN.count("\nclass ") + TRAIN.count("\nimport ") + 1
    assert never.calls > statements


@pytest.mark.parametrize("at", [1, 2, 5, 12, "last"])
def test_an_interrupted_check_raises_and_the_next_check_answers_in_full(project, at):
    workspace, key = project
    expected = codes(workspace.check({key: TRAIN}), key)
    edited = TRAIN.replace("dim=1", "dim=-1")
    if at == "last":  # the check's very last question, however many rules run
        counted = Countdown(None)
        workspace.check({key: edited + "\n"}, counted)
        at = counted.calls
    # A BaseException: the handlers that keep one failing rule from stopping the others
    # (`except Exception`) let it through instead of reporting a crashed rule.
    with pytest.raises(CheckInterrupted):
        workspace.check({key: edited}, Countdown(at))
    assert codes(workspace.check({key: edited}), key) == expected
    assert codes(workspace.check({key: TRAIN}), key) == expected
