"""Static fuzz on torch's installed sources, bounded: a handful of files, each seeded with
finding-rich snippets and checked under every mutation of tests/torch_fuzz.py (page breaks,
odd separators, CRLF, lone CR, BOM, tabs, deep nesting) plus a `# noqa` as --add-noqa
writes it. benchmarks/reliability.py runs the same on hundreds of files."""

from __future__ import annotations

import random

import pytest

from fuzzing import make_engine
from torch_fuzz import FuzzFigures, fuzz_file, seed_findings, torch_sources

FILES = 5


@pytest.fixture(scope="module")
def sources():
    files = torch_sources(limit_bytes=20_000)
    if not files:
        pytest.skip("torch is not installed")
    return random.Random(2026).sample(files, min(FILES, len(files)))


def test_mutated_torch_sources_keep_their_findings_on_their_code(tmp_path, sources):
    engine = make_engine(tmp_path)
    figures = FuzzFigures()
    rnd = random.Random(11)
    for source in sources:
        fuzz_file(engine, tmp_path, source, rnd, figures)
    assert figures.files >= FILES - 1 and figures.findings > 0
    assert figures.problems == []


def test_a_page_break_before_a_noqa_is_caught_by_the_harness(tmp_path):
    """The harness's noqa property sees the bug it was written for: a splitlines-based reader."""
    from unittest import mock

    from torchlint.static import suppress

    text = seed_findings("import os\n\n\ndef f():\n    return 1\n", random.Random(0))
    source = tmp_path / "src.py"
    source.write_text(text)
    figures = FuzzFigures()
    wrong = lambda text, keepends=False: text.splitlines(keepends)  # noqa: E731
    with mock.patch.object(suppress, "python_lines", wrong):
        for seed in range(4):
            fuzz_file(make_engine(tmp_path), tmp_path, source, random.Random(seed), figures, mutations=["form-feed line"])
    assert any("noqa" in problem for problem in figures.problems)
