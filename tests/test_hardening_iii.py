"""Hardening III: files a user can point torchlint at are read bounded, a checked tree cannot
make torchlint import its code or write outside it, the front door reads only the example,
and a folder without a project marker is one project whatever the command names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchlint.cli import main

ROOT = Path(__file__).resolve().parents[1]
SOURCE = 'import torch; DEVICE = "cuda" if torch.cuda.is_available() else "cpu"\nx = torch.load("m.pt", weights_only=True)\n'


def check(*args: str):
    return CliRunner().invoke(main, ["check", "--no-cache", *args], catch_exceptions=False)


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(SOURCE)
    return tmp_path


def test_python_m_torchlint_does_not_import_the_checked_trees_own_modules(tmp_path):
    for name in ("click", "pluggy", "tomllib", "libcst"):
        (tmp_path / f"{name}.py").write_text(f"raise SystemExit('the tree\\'s own {name}.py was imported')\n")
    (tmp_path / "a.py").write_text(SOURCE)
    done = subprocess.run([sys.executable, "-m", "torchlint", "check", "--isolated", "--no-cache", "a.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert "was imported" not in done.stdout + done.stderr
    assert done.returncode == 1 and "TL301" in done.stdout


@pytest.mark.parametrize("folder", ["../outside", "/tmp/torchlint-outside-cache"])
def test_a_configuration_cannot_put_the_cache_outside_the_project(tree, folder):
    (tree / "pyproject.toml").write_text(f'[tool.torchlint]\ncache-dir = "{folder}"\n')
    result = CliRunner().invoke(main, ["check", "a.py"], catch_exceptions=False)
    assert result.exit_code == 2
    assert "is outside the project" in result.output
    assert not (tree.parent / "outside").exists() and not Path("/tmp/torchlint-outside-cache").exists()


def test_the_flag_may_put_the_cache_anywhere(tree, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("cache") / "c"
    result = CliRunner().invoke(main, ["check", "--cache-dir", str(elsewhere), "a.py"], catch_exceptions=False)
    assert result.exit_code == 1 and elsewhere.is_dir()


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("option", ["--baseline", "--config"])
def test_a_file_the_user_names_that_is_a_device_is_refused_not_read(tree, option):
    (tree / "endless").symlink_to("/dev/zero")
    result = check(option, "endless", "a.py")
    assert result.exit_code == 2
    assert "not a regular file" in result.output


def test_a_baseline_nested_past_the_cap_is_refused_with_a_message(tree):
    (tree / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    result = check("--baseline", "deep.json", "a.py")
    assert result.exit_code == 2
    assert "nested deeper than" in result.output


def test_a_reference_nested_past_the_cap_or_of_the_wrong_shape_is_refused():
    pytest.importorskip("torch")
    from torchlint.plugins.probes.reference.store import ReferenceError, load

    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        deep = Path(folder) / "deep.json"
        deep.write_text("[" * 200_000 + "]" * 200_000)
        with pytest.raises(ReferenceError, match="nested deeper than"):
            load(str(deep))
        shaped = Path(folder) / "shaped.json"
        shaped.write_text(json.dumps({"format": "torchlint-reference", "version": 1, "steps": {}, "parameters": []}))
        with pytest.raises(ReferenceError, match="without its steps"):
            load(str(shaped))


def test_a_torchlint_key_that_is_not_a_table_is_an_error_not_ignored(tree):
    (tree / "pyproject.toml").write_text("[tool]\ntorchlint = 3\n")
    result = check("a.py")
    assert result.exit_code == 2
    assert "[tool.torchlint] must be a table" in result.output


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS refuses file names that are not UTF-8")
def test_sarif_of_a_file_whose_name_is_not_utf8_is_valid_json(tmp_path):
    os.mkdir(tmp_path / "t")
    with open(os.path.join(os.fsencode(tmp_path / "t"), b"bad\xff.py"), "wb") as handle:
        handle.write(SOURCE.encode())
    done = subprocess.run([sys.executable, "-m", "torchlint", "check", "--no-cache", "--output-format", "sarif", "."],
                          cwd=tmp_path / "t", capture_output=True, timeout=120)
    assert done.returncode == 1, done.stderr.decode()
    log = json.loads(done.stdout.decode("utf-8"))
    (result,) = log["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "bad%FF.py"


def test_the_bundled_example_is_a_project_of_its_own():
    from torchlint.static.roots import RootFinder

    example = ROOT / "examples" / "buggy_project"
    assert RootFinder().of(example / "train.py") == str(example)
    assert RootFinder().of(ROOT / "examples" / "fixed_project" / "train.py") == str(ROOT / "examples" / "fixed_project")


def test_without_a_marker_the_folder_the_command_runs_in_is_the_project(tmp_path, monkeypatch):
    from torchlint.config import Config
    from torchlint.static.discover import discover
    from torchlint.static.project_rest import rest_of_projects
    from torchlint.static.roots import RootFinder

    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "train.py").write_text("import torch\nfrom models import Net\n")
    (folder / "models.py").write_text("import torch\nclass Net(torch.nn.Module):\n    pass\n")
    config = Config(root=folder)
    given = discover([folder / "train.py"], config, cwd=folder)
    rest = rest_of_projects([folder / "train.py"], given, config, cwd=folder, finder=RootFinder(folder))
    assert [item.path.name for item in rest] == ["models.py"]
    # and nothing outside the folder the command runs in becomes part of it
    assert rest_of_projects([folder / "train.py"], given, config, cwd=folder, finder=RootFinder(tmp_path / "other")) == []


def test_torchlint_lsp_is_the_language_server():
    result = CliRunner().invoke(main, ["lsp", "--help"], catch_exceptions=False)
    assert result.exit_code == 0 and "language server" in result.output.lower()


def test_every_scope_is_indexed_once_whatever_the_number_of_loads(monkeypatch):
    """1,000 `torch.load` lines at module level walked the module once per line (over a minute);
    the uses of every name are indexed in one walk of the scope."""
    from torchlint.semantic import name_uses
    from torchlint.testing import check_sources

    walks = []
    indexing = name_uses._index
    monkeypatch.setattr(name_uses, "_index", lambda scope, numpy_call: walks.append(scope) or indexing(scope, numpy_call))
    lines = ["import torch", 'p = "m.pt"'] + [f"m{i} = torch.load(p)" for i in range(200)]
    result = check_sources({"big.py": "\n".join(lines) + "\n"}, select=["TL301", "TL302"])
    assert len([f for f in result.findings if f.code == "TL302"]) == 200
    assert len(walks) == 1


def test_a_folder_that_cannot_be_listed_is_one_finding_and_the_check_goes_on(tmp_path, monkeypatch):
    """The README promises TL000 for a folder the user may not search; exercised even as root
    (where permissions are not enforced) by making the listing fail the way it does then."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (tmp_path / "ok.py").write_text("import torch\ny = torch.ger(a, a)\n")
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "inner.py").write_text("import torch\ny = torch.ger(a, a)\n")
    real = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "json", "."])
    found = {(Path(f["filename"]).as_posix(), f["code"]): f for f in json.loads(result.stdout)}
    assert set(found) == {("locked", "TL000"), ("ok.py", "TL502")}, result.output
    assert "cannot list folder" in found[("locked", "TL000")]["message"].lower()
    assert result.exit_code == 1
