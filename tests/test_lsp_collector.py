"""The language server frees what a check leaves in reference cycles right after the check,
so the cycle collector does not run in the middle of the next one."""

from __future__ import annotations

import gc
import weakref

import pytest

from torchlint.lsp import collector
from torchlint.lsp.collector import BetweenChecks
from torchlint.lsp.linting import LintWorkspace, path_key
from torchlint.static import context

MODEL = """
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

train(Net(), [])
"""


@pytest.fixture
def no_automatic_collection():
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    yield
    if was_enabled:
        gc.enable()


@pytest.fixture
def contexts(monkeypatch):
    """Weak references to every FileContext a check makes."""
    made: list[weakref.ref] = []
    original = context.FileContext.__init__

    def recording(self, *args, **kwargs):
        original(self, *args, **kwargs)
        made.append(weakref.ref(self))

    monkeypatch.setattr(context.FileContext, "__init__", recording)
    return made


def test_a_check_leaves_its_state_in_cycles_that_after_check_frees(tmp_path, no_automatic_collection, contexts):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    path = tmp_path / "train.py"
    path.write_text(MODEL)
    workspace = LintWorkspace([tmp_path], isolated=True)
    found = workspace.check({path_key(path): MODEL})
    assert [f.code for f in found.findings[path_key(path)]] == ["TL101"]
    assert contexts and all(ref() is not None for ref in contexts), "nothing left for the collector: the test shows nothing"
    BetweenChecks().after_check()
    assert all(ref() is None for ref in contexts)


def test_a_full_collection_every_so_often(monkeypatch):
    asked: list[tuple] = []
    monkeypatch.setattr(collector.gc, "collect", lambda *generation: asked.append(generation) or 0)
    between = BetweenChecks()
    for _ in range(collector.FULL_EVERY * 2):
        between.after_check()
    assert asked.count(()) == 2
    assert asked.count((1,)) == collector.FULL_EVERY * 2 - 2


@pytest.fixture
def thawed_after():
    yield
    gc.unfreeze()  # leave the test process's collector as it found it


class _Cyclic:
    def __init__(self) -> None:
        self.me = self


def test_what_a_check_keeps_is_frozen_and_its_cycles_still_die_at_the_full_collection(thawed_after):
    between = BetweenChecks()
    kept = _Cyclic()  # the server keeps it past the check (a parsed tree, a result)
    alive = weakref.ref(kept)
    between.after_check()
    assert gc.get_freeze_count() > 0
    del kept  # dropped by a later edit: garbage, but in a cycle
    gc.collect()
    assert alive() is not None, "frozen: CPython's collections (during a check) do not walk it"
    for _ in range(collector.FULL_EVERY):
        between.after_check()
    assert alive() is None, "thawed by the next after_check and freed by the periodic full collection"
