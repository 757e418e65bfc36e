"""--fix never writes code to the wrong place, never trusts the cache for what it writes, and
says so (TL002) when it cannot apply or write a fix; the file is then left as it was."""

from __future__ import annotations

import json
import os
import stat

import pytest
from click.testing import CliRunner

from torchlint.cli import main
from torchlint.findings import Edit, Fix
from torchlint.fix.apply import apply_fixes, line_starts

FIXED_LOAD = 'torch.load("m.pt", weights_only=True, map_location="cpu")'


def run(*args):
    return CliRunner().invoke(main, ["check", *args], catch_exceptions=False)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_line_starts_follow_libcst_line_ends():
    # "\r\n", a lone "\r" and "\n" each end a line, as they do for libcst and str.splitlines.
    text = "a\r\nb\rc\nd"
    assert [text[s] for s in line_starts(text)] == ["a", "b", "c", "d"]
    assert len(line_starts(text)) == len(text.splitlines())


def test_mixed_line_endings_are_fixed_in_place(workdir):
    source = 'import torch; DEVICE = "cuda" if torch.cuda.is_available() else "cpu"\r\nm = 1\rprint(m, x, s)\nx = torch.load("m.pt", weights_only=True)\n'
    (workdir / "mixed.py").write_bytes(source.encode())
    result = run("--no-cache", "--fix", "--unsafe-fixes", "--select", "TL301", "mixed.py")
    assert result.exit_code == 0, result.output
    assert (workdir / "mixed.py").read_bytes().decode() == source.replace(
        'torch.load("m.pt", weights_only=True)', FIXED_LOAD
    )


def test_lone_cr_file_is_fixed_and_later_files_too(workdir):
    (workdir / "a_cr.py").write_bytes(b'import torch; DEVICE = "cuda" if torch.cuda.is_available() else "cpu"\rx = torch.load("m.pt", weights_only=True)\r')
    (workdir / "b_lf.py").write_bytes(b'import torch; DEVICE = "cuda" if torch.cuda.is_available() else "cpu"\nx = torch.load("m.pt", weights_only=True)\n')
    result = run("--no-cache", "--fix", "--unsafe-fixes", "--select", "TL301", ".")
    assert result.exit_code == 0, result.output
    assert (workdir / "a_cr.py").read_bytes() == f"import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\rx = {FIXED_LOAD}\r".encode()
    assert (workdir / "b_lf.py").read_bytes() == f"import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = {FIXED_LOAD}\n".encode()


def test_an_edit_that_does_not_find_its_text_is_refused():
    text = "print(m, x, s)\nx = torch.load(p)\n"
    wrong_place = Fix("add map_location", "safe", (Edit("torch.load(p, map_location='cpu')", 1, 1, 1, 11, "torch.load(p)"),))
    outcome = apply_fixes(text, [wrong_place])
    assert outcome.text == text and outcome.stale == [wrong_place] and outcome.fixes == []
    right_place = Fix("add map_location", "safe", (Edit("torch.load(p, map_location='cpu')", 2, 5, 2, 18, "torch.load(p)"),))
    assert apply_fixes(text, [right_place]).text == "print(m, x, s)\nx = torch.load(p, map_location='cpu')\n"


@pytest.mark.parametrize("span", [(9, 1, 9, 4), (1, 1, 1, 99), (2, 3, 1, 1), (0, 1, 1, 1)])
def test_an_edit_outside_the_text_is_refused_not_a_crash(span):
    fix = Fix("x", "safe", (Edit("y", *span),))
    outcome = apply_fixes("ab\ncd\n", [fix])
    assert outcome.text == "ab\ncd\n" and outcome.stale == [fix]


def _poison_cache(root, payload_edit):
    """Rewrite every cache entry's fixes to insert code of an attacker's choosing."""
    entries = [p for p in (root / ".torchlint_cache").rglob("*.json")]
    assert entries
    for entry in entries:
        data = json.loads(entry.read_text())
        for finding in data["findings"]:
            if finding.get("fix"):
                finding["fix"]["edits"] = [payload_edit]
        entry.write_text(json.dumps(data))


def test_fix_never_writes_edits_taken_from_the_cache(workdir):
    source = 'import torch; DEVICE = "cuda" if torch.cuda.is_available() else "cpu"\nx = torch.load("m.pt", weights_only=True)\n'
    (workdir / "a.py").write_text(source)
    assert run("--select", "TL301", "a.py").exit_code == 1  # fills the cache
    injected = "__import__('os').system('echo pwned')"
    _poison_cache(workdir, {"content": injected, "location": {"row": 2, "column": 5},
                            "end_location": {"row": 2, "column": 43}, "original": 'torch.load("m.pt", weights_only=True)'})
    result = run("--fix", "--unsafe-fixes", "--select", "TL301", "a.py")
    text = (workdir / "a.py").read_text()
    assert injected not in text
    assert text == f"import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = {FIXED_LOAD}\n", result.output


@pytest.mark.parametrize("garbage", [
    "[" * 100_000 + "]" * 100_000,                                  # nested past json's recursion limit
    '{"key": "%s", "findings": [{"code": 1}], "facts": []}',       # wrong shapes
    '{"key": "%s", "findings": "not a list"}',
])
def test_a_corrupt_cache_entry_is_a_miss_not_a_crash(workdir, garbage):
    (workdir / "a.py").write_text('import torch; DEVICE = "cuda" if torch.cuda.is_available() else "cpu"\nx = torch.load("m.pt", weights_only=True)\n')
    assert run("--select", "TL301", "a.py").exit_code == 1
    for entry in (workdir / ".torchlint_cache").rglob("*.json"):
        entry.write_text(garbage.replace("%s", entry.stem) if "%s" in garbage else garbage)
    result = run("--select", "TL301", "--output-format", "concise", "a.py")
    assert result.exit_code == 1
    assert "a.py:2:5: TL301" in result.output


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write into a read-only folder")
def test_a_fix_that_cannot_be_written_is_a_finding(workdir):
    folder = workdir / "ro"
    folder.mkdir()
    source = 'import torch; DEVICE = "cuda" if torch.cuda.is_available() else "cpu"\nx = torch.load("m.pt", weights_only=True)\n'
    (folder / "a.py").write_text(source)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        result = run("--no-cache", "--fix", "--unsafe-fixes", "--output-format", "concise", "ro/a.py")
    finally:
        folder.chmod(stat.S_IRWXU)
    assert result.exit_code == 1
    assert "TL002 the fixes could not be written" in result.output
    assert (folder / "a.py").read_text() == source


def test_a_failed_write_is_a_finding_even_as_root(workdir, monkeypatch):
    # Root ignores folder permissions, so make the write itself fail the way a read-only
    # folder or a full disk makes it fail.
    from torchlint import atomic

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(atomic.tempfile, "mkstemp", refuse)
    source = 'import torch; DEVICE = "cuda" if torch.cuda.is_available() else "cpu"\nx = torch.load("m.pt", weights_only=True)\n'
    (workdir / "a.py").write_text(source)
    result = run("--no-cache", "--fix", "--unsafe-fixes", "--output-format", "concise", "a.py")
    assert result.exit_code == 1
    assert "a.py:1:1: TL002 the fixes could not be written (Permission denied); the file is unchanged" in result.output
    assert "TL301" in result.output  # the finding the fix was for still stands
    assert (workdir / "a.py").read_text() == source


def test_fix_writes_through_a_symlink(workdir):
    (workdir / "real").mkdir()
    target = workdir / "real" / "model.py"
    target.write_text('import torch; DEVICE = "cuda" if torch.cuda.is_available() else "cpu"\nx = torch.load("m.pt", weights_only=True)\n')
    (workdir / "link.py").symlink_to(target)
    result = run("--no-cache", "--fix", "--unsafe-fixes", "--select", "TL301", "link.py")
    assert result.exit_code == 0, result.output
    assert (workdir / "link.py").is_symlink()
    assert target.read_text() == f"import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = {FIXED_LOAD}\n"
