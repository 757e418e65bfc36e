"""The cache folder as an attack surface: it lives in the checked tree (even with
`--isolated`), so a pull request can commit one. Symbolic links in it must not make torchlint
write outside it, a FIFO must not hang a check, a damaged entry is a miss, and a folder
torchlint did not make is never tagged, hidden from git or deleted.

Bounded: 20-odd cases, each a check or two of one small file; whatever could block (a FIFO)
runs in a subprocess with a timeout, so a regression fails instead of hanging pytest.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchlint.cli import main

BUGGY = "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nstate = torch.load('ckpt.pt', weights_only=True)\n"
EXPECTED = [("a.py", "TL301", 2)]
TIMEOUT = 60


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


def the_entry(root: Path, folder: str = ".torchlint_cache") -> Path:
    found = [p for p in (root / folder).rglob("*.json") if not p.name.startswith(".tmp")]
    assert len(found) == 1, found
    return found[0]


def everything_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# -- links: nothing is created outside the cache ---------------------------------------------


def _link_top(root: Path, outside: Path) -> None:
    shutil.rmtree(cache(root))
    cache(root).symlink_to(outside, target_is_directory=True)


def _link_level(level: int):
    """Replace the folder `level` steps above the entry (1: shard, 2: fingerprint, 3: `v1`)
    with a link to the outside folder."""

    def link(root: Path, outside: Path) -> None:
        folder = the_entry(root).parents[level - 1]
        shutil.rmtree(folder)
        folder.symlink_to(outside, target_is_directory=True)
        if level == 1:  # the edited file's entry may fall in another shard: link them all
            for shard in (f"{n:02x}" for n in range(256)):
                if not (folder.parent / shard).is_symlink():
                    (folder.parent / shard).symlink_to(outside, target_is_directory=True)

    return link


@pytest.mark.parametrize(
    "plant", [_link_top, _link_level(3), _link_level(2), _link_level(1)], ids=["cache-folder", "v1", "fingerprint", "shard"]
)
def test_a_linked_folder_in_the_cache_makes_nothing_outside_it(project, plant):
    outside = project.parent / "outside"
    assert check() == EXPECTED
    plant(project, outside)
    (project / "a.py").write_text(BUGGY + "# edited: a new entry to write\n")
    assert check() == EXPECTED
    assert everything_under(outside) == []
    assert check() == EXPECTED  # and again, through whatever the first run left
    (outside / "keep.txt").write_text("mine\n")
    invoke("clean")
    assert everything_under(outside) == ["keep.txt"]  # clean follows no link either


def test_a_linked_entry_is_not_read_and_its_target_is_left_alone(project):
    assert check() == EXPECTED
    entry = the_entry(project)
    forged = project.parent / "outside" / "forged.json"
    # a well-formed entry that says "no findings": read through the link, it would hide TL301
    data = json.loads(entry.read_text())
    data["findings"] = []
    forged.write_text(json.dumps(data))
    before = forged.read_text()
    entry.unlink()
    entry.symlink_to(forged)
    assert check() == EXPECTED
    assert forged.read_text() == before


def test_a_dangling_link_in_place_of_the_tag_creates_nothing_outside(project):
    outside = project.parent / "outside"
    assert check() == EXPECTED
    shutil.rmtree(cache(project))
    cache(project).mkdir()
    for name in ("CACHEDIR.TAG", ".gitignore"):
        (cache(project) / name).symlink_to(outside / name)
    assert check() == EXPECTED
    invoke("clean")
    assert everything_under(outside) == []


# -- FIFOs: nothing blocks ---------------------------------------------------------------------


def _subprocess(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TORCHLINT_CACHE_DIR"}
    return subprocess.run(
        [sys.executable, "-m", "torchlint", *args], cwd=root, capture_output=True, text=True, timeout=TIMEOUT, env=env
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX thing")
@pytest.mark.parametrize("where", ["entry", "tag", "marker-names"])
def test_a_fifo_in_the_cache_blocks_neither_check_nor_clean(project, where):
    # a configured folder: `clean` reads what is in it to tell whether it is torchlint's
    folder = project / "lint-cache"
    assert check("--cache-dir", "lint-cache") == EXPECTED
    if where == "entry":
        fifos = [the_entry(project, "lint-cache")]
    elif where == "tag":
        fifos = [folder / "CACHEDIR.TAG", folder / ".gitignore"]
    else:  # every file at the top of the cache folder: whatever name the ownership marker has
        fifos = [p for p in folder.iterdir() if p.is_file()]
    for path in fifos:
        path.unlink()
        os.mkfifo(path)
    done = _subprocess(project, "check", "--cache-dir", "lint-cache", "--output-format", "json", "a.py")
    assert done.returncode == 1, done.stderr
    assert [(f["filename"], f["code"]) for f in json.loads(done.stdout)] == [("a.py", "TL301")]
    assert _subprocess(project, "clean", "--cache-dir", "lint-cache").returncode == 0
    assert (project / "a.py").exists()


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


def test_an_entry_over_the_size_bound_is_not_read(project, monkeypatch):
    from torchlint.static import cache as cache_module

    assert check() == EXPECTED
    entry = the_entry(project)
    data = json.loads(entry.read_text())
    data["findings"] = []
    entry.write_text(json.dumps(data) + " " * 4096)  # forged, and padded past the bound
    monkeypatch.setattr(cache_module, "MAX_ENTRY_BYTES", 4096)
    assert check() == EXPECTED


# -- ownership: a folder torchlint did not make is never tagged, hidden or deleted ------------


def test_cache_dir_dot_then_clean_keeps_the_project_and_its_git(project):
    result = invoke("check", "--cache-dir", ".", "a.py")
    assert result.exit_code == 2 and "not a torchlint cache" in result.output
    assert not (project / ".gitignore").exists() and not (project / "CACHEDIR.TAG").exists()
    invoke("clean", "--cache-dir", ".")
    assert (project / "a.py").read_text() == BUGGY
    assert (project / ".git" / "HEAD").exists() and (project / "pyproject.toml").exists()


def test_a_configured_source_folder_is_refused_and_clean_leaves_it(project):
    (project / "src").mkdir()
    (project / "src" / "model.py").write_text(BUGGY)
    (project / "pyproject.toml").write_text('[tool.torchlint]\ncache-dir = "src"\n')
    result = invoke("check", "a.py")
    assert result.exit_code == 2 and "src" in result.output
    assert sorted(p.name for p in (project / "src").iterdir()) == ["model.py"]
    invoke("clean")
    assert (project / "src" / "model.py").read_text() == BUGGY


def test_a_folder_an_older_torchlint_tagged_is_untagged_by_clean_and_its_files_kept(project):
    """What `--cache-dir .` left behind before torchlint owned its folders: the tag, the `*`
    .gitignore and a `v1/` tree among the project's files. `clean` takes back its own."""
    fingerprint = project / "v1" / ("0" * 24) / "ab"
    fingerprint.mkdir(parents=True)
    (fingerprint / ("ab" + "0" * 30 + ".json")).write_text("{}")
    (project / "CACHEDIR.TAG").write_text(
        "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by torchlint.\n"
    )
    (project / ".gitignore").write_text("# created by torchlint\n*\n")
    result = invoke("clean", "--cache-dir", ".")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in project.iterdir()) == [".git", "a.py", "pyproject.toml"]
    assert (project / ".git" / "HEAD").exists()


def test_the_default_cache_folder_holding_other_files_is_left_alone_with_a_warning(project):
    cache(project).mkdir()
    (cache(project) / "notes.txt").write_text("mine\n")
    result = invoke("check", "--output-format", "json", "a.py")
    assert result.exit_code == 1 and "not a torchlint cache" in result.stderr
    assert sorted(p.name for p in cache(project).iterdir()) == ["notes.txt"]
    invoke("clean")
    assert (cache(project) / "notes.txt").read_text() == "mine\n"


def test_an_empty_folder_is_adopted_and_a_cache_is_still_cleaned_whole(project):
    (project / "lint-cache").mkdir()
    assert check("--cache-dir", "lint-cache") == EXPECTED
    assert (project / "lint-cache" / ".gitignore").exists()
    assert check() == EXPECTED
    result = invoke("clean", "--cache-dir", "lint-cache")
    assert result.output.splitlines() == ["Removed lint-cache", "Removed .torchlint_cache"]
    assert not (project / "lint-cache").exists() and not cache(project).exists()
    assert sorted(p.name for p in project.iterdir()) == [".git", "a.py", "pyproject.toml"]


def test_clean_keeps_what_a_user_put_into_a_cache_folder(project):
    assert check() == EXPECTED
    (cache(project) / "notes.txt").write_text("mine\n")
    invoke("clean")
    assert sorted(p.name for p in cache(project).iterdir()) == ["notes.txt"]
