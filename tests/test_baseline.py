from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from torchlint.cli import main

LEGACY = "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n\ndef a(p):\n    return torch.load(p, weights_only=True)\n\ndef b(p):\n    return torch.load(p, weights_only=True)\n"


def run(*args):
    return CliRunner().invoke(main, ["check", "--no-cache", *args], catch_exceptions=False)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "legacy.py").write_text(LEGACY)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_baseline_hides_known_findings_and_reports_new_ones(repo):
    written = run("--write-baseline", "baseline.json", ".")
    assert written.exit_code == 0 and "Wrote 2 findings" in written.output
    entries = json.loads((repo / "baseline.json").read_text())["entries"]
    assert [(e["code"], e["path"], e["count"]) for e in entries] == [("TL301", "legacy.py", 2)]
    assert "line" not in json.dumps(entries)  # keyed by snippet, not line

    clean = run("--baseline", "baseline.json", ".")
    assert clean.exit_code == 0 and "2 suppressed by baseline" in clean.output

    # Code added above the old findings moves their lines; they stay baselined.
    (repo / "legacy.py").write_text("import os\n\n\n" + LEGACY + "\ndef c(q):\n    return torch.load(q, weights_only=True)\n")
    drifted = run("--baseline", "baseline.json", "--output-format", "concise", ".")
    assert drifted.exit_code == 1
    assert [line.split(":")[1] for line in drifted.output.splitlines() if "TL301" in line] == ["13"]


def test_a_third_identical_finding_is_new(repo):
    run("--write-baseline", "baseline.json", ".")
    (repo / "legacy.py").write_text(LEGACY + "\ndef c(p):\n    return torch.load(p, weights_only=True)\n")
    result = run("--baseline", "baseline.json", "--output-format", "json", "-q", ".")
    assert len(json.loads(result.output)) == 1


def test_stale_entries_are_reported_and_can_fail_ci(repo):
    run("--write-baseline", "baseline.json", ".")
    (repo / "legacy.py").write_text(LEGACY.replace("torch.load(p, weights_only=True)", "torch.load(p, map_location='cpu', weights_only=True)"))
    result = run("--baseline", "baseline.json", ".")
    assert result.exit_code == 0
    assert "1 baseline entries no longer match" in result.output
    assert run("--baseline", "baseline.json", "--fail-on-stale-baseline", ".").exit_code == 1


def test_entries_for_files_outside_this_run_are_not_stale(repo):
    (repo / "other.py").write_text(LEGACY)
    run("--write-baseline", "baseline.json", ".")
    result = run("--baseline", "baseline.json", "--fail-on-stale-baseline", "legacy.py")
    assert result.exit_code == 0 and "no longer match" not in result.output


def test_bad_baseline_is_a_usage_error(repo):
    (repo / "baseline.json").write_text("{nope")
    result = run("--baseline", "baseline.json", ".")
    assert result.exit_code == 2 and "not a torchlint baseline" in result.output
    assert run("--baseline", "missing.json", ".").exit_code == 2
