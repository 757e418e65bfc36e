"""Fix differential, bounded: the repo's examples and a few of torch's installed files
(seeded with fixable snippets) are fixed plain and with --unsafe-fixes; each result parses,
a second fix changes nothing, and the AST changes only inside the spans the fixes replaced
(tests/fix_differential.py). benchmarks/reliability.py runs it over timm."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from fix_differential import DiffFigures, ast_changes_outside, differential
from fuzzing import make_engine
from torch_fuzz import seed_findings, torch_sources
from torchlint.findings import Edit

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture
def engine(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return make_engine(tmp_path)


def test_fixes_of_the_examples_change_only_their_nodes(engine):
    figures = DiffFigures()
    for path in sorted(EXAMPLES.rglob("*.py")):
        differential(engine, "case.py", path.read_text(encoding="utf-8"), figures)
    # buggy_project's five fixes and the runtime examples' four; fixed_project has none left
    assert figures.fixes >= 9 and figures.problems == []


def test_fixes_in_torch_sources_change_only_their_nodes(engine):
    files = torch_sources(limit_bytes=20_000)
    if not files:
        pytest.skip("torch is not installed")
    rnd = random.Random(5)
    figures = DiffFigures()
    for path in rnd.sample(files, 4):
        differential(engine, "case.py", seed_findings(path.read_text(encoding="utf-8"), rnd, count=6), figures)
    assert figures.fixes >= 4 and figures.problems == []


def test_the_comparison_sees_a_replacement_that_needed_parentheses():
    before = "y = 2 * f(a)\nz = 1\n"
    edit = Edit("a + 1", 1, 9, 1, 13, "f(a)")
    assert ast_changes_outside(before, "y = 2 * a + 1\nz = 1\n", [edit])
    assert ast_changes_outside(before, "y = 2 * (a + 1)\nz = 1\n", [edit]) == []


def test_the_comparison_sees_a_change_outside_the_fix():
    before = "y = f(a)\nz = 1\n"
    edit = Edit("g(a)", 1, 5, 1, 9, "f(a)")
    assert ast_changes_outside(before, "y = g(a)\nz = 2\n", [edit])
    assert ast_changes_outside(before, "y = g(a)\nz = 1\n", [edit]) == []


@pytest.mark.parametrize("mutation", ["form-feed line", "separators in a comment", "crlf", "lone cr", "tabs"])
def test_fixes_in_mutated_sources_change_only_their_nodes(engine, mutation):
    """The same under the line endings and separators of tests/torch_fuzz.py."""
    from torch_fuzz import MUTATIONS

    files = torch_sources(limit_bytes=20_000)
    if not files:
        pytest.skip("torch is not installed")
    rnd = random.Random(8)
    figures = DiffFigures()
    for path in rnd.sample(files, 2):
        text, _ = MUTATIONS[mutation](seed_findings(path.read_text(encoding="utf-8"), rnd, count=6), rnd)
        differential(engine, "case.py", text, figures)
    assert figures.fixes >= 2 and figures.problems == []
