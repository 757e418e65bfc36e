"""The command line as a user meets it: exit codes, formats, selection, statistics."""

from __future__ import annotations

import json
import textwrap

import pytest
from click.testing import CliRunner

from torchlint.cli import main

BUGGY = "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nstate = torch.load('ckpt.pt', weights_only=True)\n"
CLEAN = "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nstate = torch.load('ckpt.pt', map_location='cpu', weights_only=True)\n"


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def invoke(*args):
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
        return result

    return invoke


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_exit_codes_follow_ruff(run, tmp_path):
    write(tmp_path / "clean.py", CLEAN)
    assert run("check", "clean.py").exit_code == 0
    write(tmp_path / "buggy.py", BUGGY)
    result = run("check", ".")
    assert result.exit_code == 1
    assert "buggy.py:2:9: TL301" in result.output
    assert run("check", "--exit-zero", ".").exit_code == 0
    assert run("check", "--no-such-flag").exit_code == 2


def test_json_output_is_ruff_shaped(run, tmp_path):
    write(tmp_path / "buggy.py", BUGGY)
    result = run("check", "--output-format", "json", "buggy.py")
    data = json.loads(result.output)
    assert [(d["code"], d["filename"], d["location"], d["end_location"]) for d in data] == [
        ("TL301", "buggy.py", {"row": 2, "column": 9}, {"row": 2, "column": 49})
    ]
    assert data[0]["fix"] == {
        "message": 'Add `map_location="cpu"`',
        "applicability": "unsafe",
        "edits": [
            {
                "content": "torch.load('ckpt.pt', weights_only=True, map_location=\"cpu\")",
                "location": {"row": 2, "column": 9},
                "end_location": {"row": 2, "column": 49},
            }
        ],
    }
    assert data[0]["name"] == "load-without-map-location"


def test_json_lines_and_concise(run, tmp_path):
    write(tmp_path / "a.py", BUGGY)
    write(tmp_path / "b.py", BUGGY)
    lines = run("check", "--output-format", "json-lines", ".").output.splitlines()
    assert [json.loads(line)["filename"] for line in lines] == ["a.py", "b.py"]
    concise = run("check", "--output-format", "concise", "-q", ".").output.splitlines()
    assert [line.split(":")[0] for line in concise] == ["a.py", "b.py"]
    assert all(": TL301 " in line for line in concise)


def test_unknown_format_and_selector_are_usage_errors(run, tmp_path):
    write(tmp_path / "a.py", BUGGY)
    result = run("check", "--output-format", "xml", "a.py")
    assert result.exit_code == 2 and "unknown --output-format 'xml'" in result.output
    result = run("check", "--select", "TL999", "a.py")
    assert result.exit_code == 2 and "TL999" in result.output


@pytest.mark.parametrize(
    "flags,expected",
    [
        ((), 1),
        (("--ignore", "TL301"), 0),
        (("--ignore", "load-without-map-location"), 0),
        (("--ignore", "TL3"), 0),
        (("--select", "TL0"), 0),
        (("--select", "TL301"), 1),
        (("--select", "ALL", "--ignore", "TL301"), 0),
    ],
)
def test_select_and_ignore(run, tmp_path, flags, expected):
    write(tmp_path / "a.py", BUGGY)
    assert run("check", "-q", *flags, "a.py").exit_code == expected


def test_statistics_counts_per_rule(run, tmp_path):
    write(tmp_path / "a.py", BUGGY + "model = torch.load('x.pt', weights_only=True)\n")
    result = run("check", "--statistics", "a.py")
    header, row, total = result.output.splitlines()
    assert header.split() == ["count", "code", "fixable", "rule"]
    assert row.split() == ["2", "TL301", "2", "load-without-map-location"]
    assert total.split() == ["2", "total", "2"]


def test_e_is_exit_zero(run, tmp_path):
    write(tmp_path / "a.py", BUGGY)
    assert run("check", "-q", "a.py").exit_code == 1
    assert run("check", "-q", "-e", "a.py").exit_code == 0


@pytest.mark.parametrize(
    "flags,env,colored",
    [((), {}, False), (("--color", "always"), {}, True), (("--color", "always"), {"NO_COLOR": "1"}, True),
     (("--color", "never"), {}, False), (("--color", "auto"), {"NO_COLOR": "1"}, False)],
)
def test_color_follows_the_flag_and_no_color(run, tmp_path, monkeypatch, flags, env, colored):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    write(tmp_path / "a.py", BUGGY)
    result = run("check", *flags, "a.py")
    assert ("\x1b[" in result.output) is colored
    assert "TL301" in result.output


def test_full_output_shows_the_fix_as_help(run, tmp_path):
    write(tmp_path / "a.py", BUGGY)
    result = run("check", "--color", "never", "a.py")
    assert "  = help: Add `map_location=" in result.output


def test_statistics_honours_the_json_output_format(run, tmp_path):
    import json

    write(tmp_path / "a.py", BUGGY + "model = torch.load('x.pt', weights_only=True)\n")
    result = run("check", "--statistics", "--output-format", "json", "a.py")
    assert json.loads(result.output) == [{"code": "TL301", "name": "load-without-map-location", "count": 2, "fixable": 2}]


def test_quiet_prints_findings_only(run, tmp_path):
    write(tmp_path / "clean.py", CLEAN)
    assert run("check", "clean.py").output.startswith("All checks passed!")
    assert run("check", "-q", "clean.py").output == ""


def test_no_cache_is_accepted_without_a_cache(run, tmp_path):
    write(tmp_path / "a.py", CLEAN)
    assert run("check", "--no-cache", "a.py").exit_code == 0


def test_rule_docs_and_rules_table(run):
    doc = run("rule", "TL301")
    assert doc.exit_code == 0
    assert doc.output.startswith("# TL301: load-without-map-location")
    assert "## Why is this bad?" in doc.output and "## Not flagged" in doc.output
    assert run("rule", "load-without-map-location").output == doc.output
    assert run("rule", "TL999").exit_code == 2
    table = run("rules").output.splitlines()
    assert table[0].split()[:4] == ["code", "name", "default", "fix"]
    assert any(line.startswith("TL301") for line in table)
    rules_json = json.loads(run("rules", "--output-format", "json").output)
    assert {"code": "TL000", "name": "file-not-checked"}.items() <= rules_json[0].items()


def test_findings_are_sorted_by_path_line_column(run, tmp_path):
    write(tmp_path / "z.py", BUGGY)
    write(tmp_path / "pkg" / "a.py", "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = [torch.load(a, weights_only=True), torch.load(b, weights_only=True)]\n" + BUGGY)
    data = json.loads(run("check", "--output-format", "json", ".").output)
    keys = [(d["filename"], d["location"]["row"], d["location"]["column"]) for d in data]
    assert keys == sorted(keys)
    assert keys[0] == ("pkg/a.py", 2, 6) and len(keys) == 4


FIXABLE = "import torch\ny = torch.ger(x, x)\nz = torch.load('a.pt')\n"


def test_fix_only_applies_fixes_and_reports_nothing_else(run, tmp_path):
    write(tmp_path / "a.py", FIXABLE)
    result = run("check", "--no-cache", "--fix-only", "a.py")
    assert result.exit_code == 0  # the unfixed TL301 is not reported
    assert "TL301" not in result.output and "Fixed 1 finding." in result.output
    assert "torch.outer(x, x)" in (tmp_path / "a.py").read_text()


def test_exit_non_zero_on_fix_fails_a_run_that_changed_files(run, tmp_path):
    write(tmp_path / "a.py", FIXABLE)
    assert run("check", "--no-cache", "--fix-only", "--exit-non-zero-on-fix", "a.py").exit_code == 1
    write(tmp_path / "b.py", FIXABLE)
    # no finding remains in the selection, but a file changed
    result = run("check", "--no-cache", "--fix", "--exit-non-zero-on-fix", "--select", "TL502", "b.py")
    assert result.exit_code == 1 and "(1 fixed)" in result.output
    write(tmp_path / "c.py", FIXABLE)
    assert run("check", "--no-cache", "--fix", "--select", "TL502", "c.py").exit_code == 0


NO_FILES = "warning: No Python files found under the given path(s)"


def test_a_path_without_python_files_warns_and_passes(run, tmp_path):
    (tmp_path / "empty").mkdir()
    write(tmp_path / "docs" / "notes.txt", "torch.load('x')\n")
    for path in ("empty", "docs"):
        result = run("check", path)
        assert result.exit_code == 0
        assert result.stderr.splitlines() == [NO_FILES]
        assert result.stdout == "All checks passed! 0 files checked.\n"
    assert run("check", "-q", "empty").output == ""
    # a missing path is still a finding, not an empty run
    missing = run("check", "missing")
    assert missing.exit_code == 1 and "TL000" in missing.stdout and NO_FILES not in missing.stderr
    write(tmp_path / "src" / "a.py", CLEAN)
    assert NO_FILES not in run("check", "src").stderr
    listed = run("check", "--show-files", "empty")
    assert listed.exit_code == 0 and listed.stdout == "" and listed.stderr.splitlines() == [NO_FILES]
