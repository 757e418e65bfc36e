"""benchmarks/peer_suites.py reads peers' expectations and scores them correctly.

No peer fixture is stored in this repository: these tests feed the scorer fixtures written
here, in the peers' formats. Scores on the real suites are benchmark results
(benchmarks/README.md), not pass/fail criteria.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("peer_suites", ROOT / "benchmarks" / "peer_suites.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


peer_suites = _load()


def _torchfix_tree(root: Path) -> None:
    checker = root / "tests" / "fixtures" / "deprecated_symbols" / "checker"
    checker.mkdir(parents=True)
    (checker / "mine.py").write_text("import torch\nx = torch.solve(b, A)\ny = torch.linalg.solve(A, b)\nz = torch.nothing(A)\n")
    # line 2 is a real removed call; line 4 names a TorchFix code on a line torchlint leaves alone
    (checker / "mine.txt").write_text("2:5 TOR001 Use of removed function torch.solve\n2:5 TOR001 again\n4:5 TOR001 made up\n")
    (checker / "orphan.py").write_text("import torch\n")  # no .txt: not a checker fixture


def test_torchfix_fixtures_are_read_from_a_checkout_and_scored_per_line(tmp_path):
    _torchfix_tree(tmp_path)
    fixtures = peer_suites.torchfix_fixtures(tmp_path, "HEAD")
    assert sorted(fixtures) == ["mine"]
    score = peer_suites.score_torchfix(fixtures)
    assert [(item.line, item.peer_code, item.flagged) for item in score.expected] == [(2, "TOR001", True), (4, "TOR001", False)]


def test_torchfix_fixtures_are_read_from_a_git_directory(tmp_path):
    _torchfix_tree(tmp_path)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "fixtures"]):
        subprocess.run(git + command, check=True, timeout=60, capture_output=True)
    (tmp_path / "tests" / "fixtures" / "deprecated_symbols" / "checker" / "mine.txt").write_text("")  # uncommitted
    fixtures = peer_suites.torchfix_fixtures(tmp_path, "HEAD")
    assert "TOR001" in fixtures["mine"][1]


def test_preflight_snippets_score_the_tests_rule_only_and_count_quiet_snippets_as_negatives():
    loop = textwrap.dedent(
        """
        def train(model, loader, criterion, optimizer):
            losses = []
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                losses.append(loss)
        """
    ).lstrip("\n")
    quiet = "import torch\nx = torch.ones(2)\n"
    records = {
        "outcomes": {"test_tg001_flags": "passed", "test_tg001_quiet": "passed", "test_tg001_broken": "failed", "test_other": "passed"},
        "snippets": [
            {"test": "test_tg001_flags", "source": loop, "findings": [["TG001", 6], ["TG003", 5]]},
            {"test": "test_tg001_flags", "source": loop, "findings": [["TG001", 6]]},  # analysed twice: scored once
            {"test": "test_tg001_quiet", "source": quiet, "findings": []},
            {"test": "test_tg001_broken", "source": quiet, "findings": [["TG001", 1]]},  # failing test: not scored
            {"test": "test_other", "source": loop, "findings": [["TG001", 6]]},  # no rule in its name
        ],
    }
    score = peer_suites.score_preflight(records)
    assert [(item.peer_code, item.line, item.flagged) for item in score.expected] == [("TG001", 6, True)]
    assert score.negatives_total == {"TG001": 1} and score.negatives == []
    assert any("test_tg001_broken" in note for note in score.notes)
