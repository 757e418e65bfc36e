"""A file's syntax tree is kept out of the cycle collector while its rules run, and nothing
stays frozen once the file is checked (torchlint.static.frozen_tree)."""

from __future__ import annotations

import gc
import weakref

import pytest

from torchlint.static import rules_run
from torchlint.testing import check_sources

CODE = "import torch\nimport torch.nn.functional as F\n\nloss = F.cross_entropy(F.softmax(x, 1), y)\n"


@pytest.fixture
def frozen_during_rules(monkeypatch):
    """How many objects were frozen each time the rules ran."""
    seen: list[int] = []
    original = rules_run.run_rules

    def recording(*args, **kwargs):
        seen.append(gc.get_freeze_count())
        return original(*args, **kwargs)

    monkeypatch.setattr(rules_run, "run_rules", recording)
    return seen


@pytest.fixture
def thawed():
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_the_tree_is_frozen_while_the_rules_run_and_thawed_after(thawed, frozen_during_rules):
    result = check_sources({"a.py": CODE}, select=["TL101"])
    assert [f.code for f in result.findings] == ["TL101"]
    assert frozen_during_rules and all(count > 0 for count in frozen_during_rules)
    assert gc.get_freeze_count() == 0


class _Cyclic:
    def __init__(self) -> None:
        self.me = self


def test_cycles_left_before_the_file_are_collected_not_frozen(thawed):
    enabled = gc.isenabled()
    gc.disable()  # only the check's own collection may free it
    try:
        left = _Cyclic()
        gone = weakref.ref(left)
        del left  # garbage in a cycle, as a previous file's context is
        check_sources({"a.py": CODE}, select=["TL101"])
        assert gone() is None
    finally:
        if enabled:
            gc.enable()


def test_a_process_that_freezes_objects_itself_is_left_to_its_own_policy(thawed, frozen_during_rules):
    kept = [_Cyclic() for _ in range(3)]
    gc.freeze()  # as the language server does between checks
    before = gc.get_freeze_count()
    check_sources({"a.py": CODE}, select=["TL101"])
    assert frozen_during_rules == [before] and gc.get_freeze_count() == before
    del kept
