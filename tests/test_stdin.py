"""`torchlint check -` and `--stdin-filename`: an editor's buffer checked as the file it will
be, nothing written to disk; with `--fix` the fixed source on stdout, the report on stderr."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from torchlint.cli import main

BUGGY = "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nstate = torch.load('ckpt.pt', weights_only=True)\n"
FIXABLE = "import torch\ny = torch.ger(x, x)\n"
FIXED = "import torch\ny = torch.outer(x, x)\n"


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def invoke(*args, source: str | bytes = ""):
        return CliRunner().invoke(main, ["check", "--no-cache", *args], input=source, catch_exceptions=False)

    return invoke


def test_a_dash_reads_stdin_and_reports_it_as_a_dash(run):
    result = run("-", "--output-format", "concise", source=BUGGY)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0].startswith("-:2:9: TL301 ")
    assert run("-", source="x = 1\n").exit_code == 0


def test_stdin_filename_names_the_source_for_config_excludes_and_report(run, tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "pyproject.toml").write_text('[tool.torchlint]\nper-file-ignores = { "tests/*" = ["TL301"] }\nextend-exclude = ["generated"]\n')
    # no file of that name needs to exist: the buffer may be unsaved
    result = run("--stdin-filename", "pkg/model.py", "--output-format", "json", source=BUGGY)
    assert [(d["filename"], d["code"]) for d in json.loads(result.stdout)] == [("pkg/model.py", "TL301")]
    # the configuration is the one of the named file's folder, per-file-ignores match its path
    assert run("--stdin-filename", "pkg/tests/test_model.py", source=BUGGY).exit_code == 0
    assert run("-", "--stdin-filename", "pkg/tests/test_model.py", source=BUGGY).exit_code == 0
    # a name the configuration excludes is still checked, as a path named on the command line is,
    assert run("--stdin-filename", "pkg/generated/m.py", source=BUGGY).exit_code == 1
    # unless --force-exclude (what editors and pre-commit pass)
    excluded = run("--stdin-filename", "pkg/generated/m.py", "--force-exclude", source=BUGGY)
    assert excluded.exit_code == 0 and excluded.stdout == ""


def test_force_exclude_honours_gitignore_for_stdin(run, tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("scratch/\n")
    assert run("--stdin-filename", "scratch/try.py", "--force-exclude", source=BUGGY).exit_code == 0
    assert run("--stdin-filename", "kept/try.py", "--force-exclude", source=BUGGY).exit_code == 1


def test_fix_on_stdin_prints_the_fixed_source_and_writes_nothing(run, tmp_path):
    (tmp_path / "model.py").write_text(FIXABLE)
    result = run("--stdin-filename", "model.py", "--fix", source=FIXABLE)
    assert result.stdout == FIXED
    assert "All checks passed! 1 file checked (1 fixed)." in result.stderr  # the report goes to stderr
    assert result.exit_code == 0
    assert (tmp_path / "model.py").read_text() == FIXABLE


def test_fix_on_stdin_echoes_source_with_nothing_to_fix_and_reports_what_remains(run):
    result = run("-", "--fix", source=BUGGY)  # TL301's fix is unsafe: not applied
    assert result.stdout == BUGGY
    assert result.exit_code == 1 and "-:2:9: TL301" in result.stderr
    unsafe = run("-", "--fix", "--unsafe-fixes", source=BUGGY)
    assert 'map_location="cpu"' in unsafe.stdout and unsafe.exit_code == 0


def test_fix_only_on_stdin(run):
    result = run("-", "--fix-only", source=FIXABLE + "z = torch.load('a.pt')\n")
    assert result.stdout == FIXED + "z = torch.load('a.pt')\n"
    assert result.exit_code == 0 and "Fixed 1 finding." in result.stderr


def test_force_excluded_stdin_with_fix_comes_back_unchanged(run, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nextend-exclude = ["vendored"]\n')
    result = run("--stdin-filename", "vendored/x.py", "--force-exclude", "--fix", source=FIXABLE)
    assert result.exit_code == 0 and result.stdout == FIXABLE


def test_diff_on_stdin_prints_the_diff(run):
    result = run("--stdin-filename", "m.py", "--diff", source=FIXABLE)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[:2] == ["--- a/m.py", "+++ b/m.py"]
    assert "+y = torch.outer(x, x)" in result.stdout


def test_stdin_keeps_its_encoding_when_fixed(run):
    source = "# -*- coding: latin-1 -*-\nimport torch\nname = 'caf\xe9'\ny = torch.ger(x, x)\n".encode("latin-1")
    result = run("-", "--fix", source=source)
    assert result.stdout_bytes == source.replace(b"torch.ger(x, x)", b"torch.outer(x, x)")


def test_source_that_cannot_be_parsed_is_one_tl000(run):
    result = run("--stdin-filename", "broken.py", "--output-format", "concise", source="def f(:\n")
    assert result.exit_code == 1 and result.stdout.startswith("broken.py:1:7: TL000")
    result = run("-", source=b"x = '\xff'\n")
    assert result.exit_code == 1 and "TL000" in result.stdout


def test_stdin_usage_errors(run, tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    for args, message in [
        (("-", "a.py"), "cannot be checked together with other paths"),
        (("--stdin-filename", "x.py", "a.py"), "give no paths"),
        (("-", "--add-noqa"), "cannot be used with stdin"),
    ]:
        result = run(*args, source="x = 1\n")
        assert result.exit_code == 2 and message in result.output, args


def test_stdin_through_a_real_pipe(tmp_path):
    """Real byte streams, not the test runner's: the fixed source arrives byte for byte."""
    source = "import torch\r\ny = torch.ger(x, x)\r\n"
    result = subprocess.run(
        [sys.executable, "-m", "torchlint", "check", "--no-cache", "--stdin-filename", "m.py", "--fix"],
        input=source.encode(), capture_output=True, cwd=tmp_path, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"import torch\r\ny = torch.outer(x, x)\r\n"
    assert b"1 fixed" in result.stderr
