"""A file's syntax tree is kept out of the cycle collector while its rules run, and nothing
stays frozen once the file is checked (torchlint.static.frozen_tree)."""

from __future__ import annotations

import gc
import types
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
    # Nothing added (the tree would add thousands) and nothing thawed (the count would drop to
    # 0). The count is not exact: frozen objects that die (a temporary of the frame that froze
    # them, freed later) leave the frozen set, so it may shrink by a few.
    assert len(frozen_during_rules) == 1 and before - 100 < frozen_during_rules[0] <= before
    assert before - 100 < gc.get_freeze_count() <= before
    del kept


def test_a_process_that_says_it_freezes_is_not_walked_for_a_count(thawed, frozen_during_rules, monkeypatch):
    """The language server and the warm server freeze through `freeze_for_the_process`: checks
    then leave collection to them without counting the frozen objects (a walk over all of
    them, 35 ms in a fork of the warm server)."""
    from torchlint.static import frozen_tree

    monkeypatch.setattr(frozen_tree, "_process_freezes", False)
    frozen_tree.freeze_for_the_process()
    before = gc.get_freeze_count()
    counted = []
    counting_gc = types.SimpleNamespace(**{name: getattr(gc, name) for name in dir(gc) if not name.startswith("__")})
    counting_gc.get_freeze_count = lambda: counted.append(1) or gc.get_freeze_count()
    monkeypatch.setattr(frozen_tree, "gc", counting_gc)
    check_sources({"a.py": CODE}, select=["TL101"])
    assert not counted and gc.get_freeze_count() == before and frozen_during_rules == [before]
