"""examples/distributed: one program per distributed rule (TL801-TL807), each with one bug
marked `# bug: TL8xx` on the line the rule must report, and a fixed twin that `torchlint
check` passes. Both are checked as a user would: the CLI, every default rule plus the
default-off TL804 and TL805."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchlint.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "distributed"
BUGGY = sorted((EXAMPLES / "buggy").glob("*.py"))
MARK = re.compile(r"#\s*bug:\s*(TL\d+)\s*$")


def check(paths: list[Path]) -> tuple[int, list[dict]]:
    # Each example stands alone, as in a user's own project: without --no-project-context the
    # check would read this whole repository for cross-file facts (14 CPU-s a file, not 0.3).
    result = CliRunner().invoke(
        main,
        ["check", "--isolated", "--no-cache", "--no-project-context", "--extend-select", "TL804,TL805", "--output-format", "json", *map(str, paths)],
        catch_exceptions=False,
    )
    return result.exit_code, json.loads(result.output or "[]")


def marked(path: Path) -> set[tuple[int, str]]:
    return {
        (number, match.group(1))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if (match := MARK.search(line)) is not None
    }


def test_every_distributed_rule_has_a_buggy_example_with_a_fixed_twin():
    codes = sorted(code for path in BUGGY for _, code in marked(path))
    assert codes == [f"TL80{n}" for n in range(1, 8)]
    assert all(len(marked(path)) == 1 for path in BUGGY), "one bug per example"
    assert sorted(p.name for p in (EXAMPLES / "fixed").glob("*.py")) == [p.name for p in BUGGY]


@pytest.mark.parametrize("path", BUGGY, ids=[p.stem for p in BUGGY])
def test_buggy_example_is_reported_on_its_marked_line_only(path):
    exit_code, findings = check([path])
    assert exit_code == 1
    assert {(f["location"]["row"], f["code"]) for f in findings} == marked(path)


def test_fixed_examples_pass():
    fixed = sorted((EXAMPLES / "fixed").glob("*.py"))
    exit_code, findings = check(fixed)
    assert findings == [] and exit_code == 0
    assert not any(MARK.search(path.read_text()) for path in fixed)
