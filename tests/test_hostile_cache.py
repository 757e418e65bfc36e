"""The cache folder as an attack surface: it lives in the checked tree (even with
`--isolated`), so a pull request can commit one. Symbolic links in it must not make torchlint
write outside it, a FIFO must not hang a check, a damaged entry is a miss, and a folder
torchlint did not make is never tagged, hidden from git or deleted.

Bounded: 20-odd cases, each a check or two of one small file; whatever could block (a FIFO)
runs in a subprocess with a timeout, so a regression fails instead of hanging pytest.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchlint.cli import main

BUGGY = "import torch  # on cuda\nstate = torch.load('ckpt.pt', weights_only=True)\n"
EXPECTED = [("a.py", "TL301", 2)]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A git project holding one buggy file, and a folder outside it that must stay empty."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "pyproject.toml").write_text("[tool.torchlint]\n")
    (root / "a.py").write_text(BUGGY)
    (tmp_path / "outside").mkdir()
    monkeypatch.chdir(root)
    monkeypatch.delenv("TORCHLINT_CACHE_DIR", raising=False)
    return root


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def check(*args) -> list[tuple[str, str, int]]:
    result = invoke("check", "--output-format", "json", *args, "a.py")
    assert result.exit_code in (0, 1), result.output
    return sorted((f["filename"], f["code"], f["location"]["row"]) for f in json.loads(result.stdout))


def cache(root: Path) -> Path:
    return root / ".torchlint_cache"


def the_entry(root: Path) -> Path:
    found = [p for p in cache(root).rglob("*.json") if not p.name.startswith(".tmp")]
    assert len(found) == 1, found
    return found[0]


def everything_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# -- damaged entries: a miss, and the findings of a fresh run -------------------------------


def _damage(change):
    def apply(entry: Path) -> None:
        data = json.loads(entry.read_text())
        change(data)
        entry.write_text(json.dumps(data))

    return apply


def _finding(change):
    return _damage(lambda data: change(data["findings"][0]))


DAMAGE = {
    "not json": lambda entry: entry.write_text("{not json"),
    "a list": lambda entry: entry.write_text("[]"),
    "findings a string": _damage(lambda d: d.update(findings="TL301")),
    "facts a list": _damage(lambda d: d.update(facts=[1])),
    "parsed a string": _damage(lambda d: d.update(parsed="yes")),
    "code a number": _finding(lambda f: f.update(code=301)),
    "row a string": _finding(lambda f: f["location"].update(row="2")),
    "row a boolean": _finding(lambda f: f["location"].update(row=True)),
    "no end location": _finding(lambda f: f.pop("end_location")),
    "unknown severity": _finding(lambda f: f.update(severity="fatal")),
    "fix edits a string": _finding(lambda f: f.update(fix={"message": "m", "applicability": "safe", "edits": "x"})),
    "evidence a dict": _finding(lambda f: f.update(evidence={"status": "confirmed"})),
    "unknown rule code": _finding(lambda f: f.update(code="TL999")),
    "deep nesting": lambda entry: entry.write_text("[" * 100_000 + "]" * 100_000),
    "not utf-8": lambda entry: entry.write_bytes(b'{"key": "\xff"}'),
    "a folder": lambda entry: (entry.unlink(), entry.mkdir()),
}


@pytest.mark.parametrize("damage", list(DAMAGE), ids=list(DAMAGE))
def test_a_damaged_entry_is_a_miss_and_the_findings_are_a_fresh_runs(project, damage):
    assert check() == EXPECTED
    DAMAGE[damage](the_entry(project))
    assert check() == EXPECTED
    assert check() == EXPECTED  # the rewritten (or still damaged) entry serves the next run too
