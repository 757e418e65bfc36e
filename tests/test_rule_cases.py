"""Every rule's Bad/Good cases are its tests: Bad cases must be flagged exactly on the lines
marked `# error`, Good cases (the hard negatives) not at all."""

from __future__ import annotations

import pytest

from torchlint.pluginmanager import collect_rules, make_plugin_manager
from torchlint.rule import Bad, Good
from torchlint.testing import case_failures

RULES = collect_rules(make_plugin_manager())
CASES = [(rule, index, case) for rule in RULES.values() for index, case in enumerate(rule.cases)]


def test_every_rule_has_bad_and_good_cases():
    for rule in RULES.values():
        if rule.runtime_only:
            continue  # found by `torchlint run`; its probe's tests cover it
        assert any(isinstance(c, Bad) for c in rule.cases), rule.code
        assert sum(isinstance(c, Good) for c in rule.cases) >= 2, f"{rule.code} needs hard negatives"


@pytest.mark.parametrize(
    "rule,index,case",
    CASES,
    ids=[f"{rule.code}-{type(case).__name__.lower()}-{index}" for rule, index, case in CASES],
)
def test_case(rule, index, case):
    assert case_failures(rule, [case]) == []
