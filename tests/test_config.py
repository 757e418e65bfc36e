"""[tool.torchlint] in pyproject.toml: discovery, keys, errors named with file and key."""

from __future__ import annotations

import json
import textwrap

import pytest
from click.testing import CliRunner

from torchlint.cli import main

BUGGY = "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nstate = torch.load('ckpt.pt', weights_only=True)\n"


def project(tmp_path, pyproject: str | None, files: dict[str, str]):
    if pyproject is not None:
        (tmp_path / "pyproject.toml").write_text(textwrap.dedent(pyproject))
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def findings(tmp_path, monkeypatch, *args, cwd=None):
    monkeypatch.chdir(cwd or tmp_path)
    result = CliRunner().invoke(main, ["check", "--output-format", "json", *args], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    # the report is stdout; warnings (no Python files found) go to stderr
    return sorted((d["filename"], d["code"]) for d in json.loads(result.stdout))


def usage_error(tmp_path, monkeypatch, *args):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", *args], catch_exceptions=False)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    return result.output


def test_ignore_and_per_file_ignores(tmp_path, monkeypatch):
    project(
        tmp_path,
        """
        [tool.torchlint]
        per-file-ignores = { "tests/*" = ["TL301"], "scripts/*.py" = ["load-without-map-location"] }
        """,
        {"src/a.py": BUGGY, "tests/test_a.py": BUGGY, "scripts/s.py": BUGGY},
    )
    assert findings(tmp_path, monkeypatch, ".") == [("src/a.py", "TL301")]


def test_config_is_found_from_a_subfolder(tmp_path, monkeypatch):
    project(tmp_path, '[tool.torchlint]\nignore = ["TL301"]\n', {"pkg/a.py": BUGGY})
    assert findings(tmp_path, monkeypatch, "a.py", cwd=tmp_path / "pkg") == []


def test_exclude_and_extend_exclude(tmp_path, monkeypatch):
    project(
        tmp_path,
        '[tool.torchlint]\nextend-exclude = ["legacy", "gen/*.py"]\n',
        {"a.py": BUGGY, "legacy/old.py": BUGGY, "gen/g.py": BUGGY, "build/b.py": BUGGY, ".venv/v.py": BUGGY},
    )
    assert findings(tmp_path, monkeypatch, ".") == [("a.py", "TL301")]
    # a file named explicitly is checked anyway, unless --force-exclude (pre-commit) says otherwise
    assert findings(tmp_path, monkeypatch, "legacy/old.py") == [("legacy/old.py", "TL301")]
    assert findings(tmp_path, monkeypatch, "--force-exclude", "legacy/old.py") == []


def test_gitignore_is_respected(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("generated/\n*_pb2.py\n!keep_pb2.py\n")
    project(tmp_path, None, {"a.py": BUGGY, "generated/x.py": BUGGY, "m_pb2.py": BUGGY, "keep_pb2.py": BUGGY, "sub/n_pb2.py": BUGGY})
    (tmp_path / "sub" / ".gitignore").write_text("local.py\n")
    (tmp_path / "sub" / "local.py").write_text(BUGGY)
    assert findings(tmp_path, monkeypatch, ".") == [("a.py", "TL301"), ("keep_pb2.py", "TL301")]


def test_cli_select_replaces_config_select_and_ignore_extends(tmp_path, monkeypatch):
    project(tmp_path, '[tool.torchlint]\nselect = ["TL0"]\n', {"a.py": BUGGY})
    assert findings(tmp_path, monkeypatch, ".") == []
    assert findings(tmp_path, monkeypatch, "--select", "TL301", ".") == [("a.py", "TL301")]


def test_explicit_config_file(tmp_path, monkeypatch):
    project(tmp_path, None, {"a.py": BUGGY})
    (tmp_path / "strict.toml").write_text('ignore = ["TL301"]\n')
    assert findings(tmp_path, monkeypatch, "--config", "strict.toml", ".") == []
    assert "no such configuration file" in usage_error(tmp_path, monkeypatch, "--config", "missing.toml", ".")


@pytest.mark.parametrize(
    "pyproject,expected",
    [
        ('[tool.torchlint]\nselct = ["TL3"]\n', "unknown key 'selct'"),
        ('[tool.torchlint]\nselect = ["TL301"]\nignore = 3\n', "ignore must be a list of strings"),
        ('[tool.torchlint]\nselect = ["TL999"]\n', "unknown rule selector 'TL999'"),
        ('[tool.torchlint]\nper-file-ignores = { "a.py" = ["nonsense"] }\n', "unknown rule selector 'nonsense'"),
        ("[tool.torchlint\n", "invalid TOML"),
        ('[tool.torchlint]\nrespect-gitignore = "yes"\n', "respect-gitignore must be true or false"),
        ('[tool.torchlint]\nplugins = ["no_such_plugin_module"]\n', "no_such_plugin_module"),
        ('[tool.torchlint]\nextend = "../pyproject.toml"\n', "pass `--config ../pyproject.toml`"),
        ('[tool.torchlint]\nselect = ["TL3"]\n[tool.torchlint.lint]\nselect = ["TL1"]\n', "'select' is set both in"),
    ],
)
def test_config_errors_exit_2_naming_file_and_key(tmp_path, monkeypatch, pyproject, expected):
    project(tmp_path, pyproject, {"a.py": BUGGY})
    output = usage_error(tmp_path, monkeypatch, ".")
    assert expected in output
    assert "pyproject.toml" in output or "no_such_plugin_module" in output


def test_a_folder_named_on_purpose_is_walked_even_inside_an_excluded_name(tmp_path, monkeypatch):
    target = tmp_path / ".venv" / "lib" / "site-packages" / "torch"
    (target / "build").mkdir(parents=True)
    (target / "a.py").write_text(BUGGY)
    (target / "build" / "b.py").write_text(BUGGY)  # excluded below the named folder
    assert findings(tmp_path, monkeypatch, str(target)) == [(f"{target.relative_to(tmp_path).as_posix()}/a.py", "TL301")]


def _check(tmp_path, *args):
    from click.testing import CliRunner

    from torchlint.cli import main

    (tmp_path / "model.py").write_text("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nstate = torch.load('ckpt.pt')\n")
    return CliRunner().invoke(main, ["check", "--output-format", "concise", *args, str(tmp_path / "model.py")])


def test_a_config_file_given_with_config_may_hold_a_tool_torchlint_table(tmp_path):
    (tmp_path / "other.toml").write_text('[tool.torchlint]\nselect = ["TL302"]\ntarget-torch = "2.5"\n')
    result = _check(tmp_path, "--config", str(tmp_path / "other.toml"))
    codes = {line.split()[1] for line in result.output.splitlines() if ": TL" in line}
    assert codes == {"TL302"}, result.output  # not silently read as a plugin table named "tool"


@pytest.mark.parametrize("name", ["torchlint.toml", ".torchlint.toml"])
def test_a_standalone_config_file_is_discovered_before_pyproject(tmp_path, name):
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nselect = ["TL301"]\n')
    (tmp_path / name).write_text('select = ["TL302"]\ntarget-torch = "2.5"\n')
    result = _check(tmp_path)
    codes = {line.split()[1] for line in result.output.splitlines() if ": TL" in line}
    assert codes == {"TL302"}, result.output


@pytest.mark.parametrize(
    "table,message",
    [
        ('target-torch = "banana"', "target-torch must be a version string"),
        ('select = "TL1"', "must be a list of strings, like ['TL1']"),
        ('[tool.torchlint.no_such_plugin]\noption = 1', "[tool.torchlint.no_such_plugin] names no plugin"),
    ],
)
def test_invalid_config_values_are_errors(tmp_path, table, message):
    body = table if table.startswith("[") else f"[tool.torchlint]\n{table}"
    (tmp_path / "pyproject.toml").write_text(body + "\n")
    result = _check(tmp_path)
    assert result.exit_code == 2
    assert message in result.output


def test_isolated_reads_no_config_and_imports_none_of_its_plugins(tmp_path):
    # a config's `plugins = [...]` imports code from the checked tree: --isolated must not
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nplugins = ["evil"]\nselect = ["TL302"]\n')
    (tmp_path / "evil.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').write('x')\n")
    result = _check(tmp_path, "--isolated")
    assert not (tmp_path / "ran").exists()
    codes = {line.split()[1] for line in result.output.splitlines() if ": TL" in line}
    assert "TL301" in codes  # the defaults apply, not the file's select
    from click.testing import CliRunner

    from torchlint.cli import main

    both = CliRunner().invoke(main, ["check", "--isolated", "--config", str(tmp_path / "pyproject.toml"), str(tmp_path)])
    assert both.exit_code == 2 and "--isolated reads no configuration file" in both.output


def test_show_settings_and_show_files_say_what_applies(tmp_path):
    from click.testing import CliRunner

    from torchlint.cli import main

    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nselect = ["TL3"]\nextend-exclude = ["skipped"]\n')
    (tmp_path / "skipped").mkdir()
    (tmp_path / "skipped" / "old.py").write_text("x = 1\n")
    (tmp_path / "train.py").write_text("x = 1\n")
    settings = CliRunner().invoke(main, ["check", "--show-settings", str(tmp_path)])
    assert settings.exit_code == 0
    assert f"configuration file  {tmp_path / 'pyproject.toml'}" in settings.output
    assert "enabled rules       TL301, TL302" in settings.output
    files = CliRunner().invoke(main, ["check", "--show-files", str(tmp_path)])
    assert files.exit_code == 0
    listed = [line.rsplit("/", 1)[-1] for line in files.output.splitlines()]
    assert listed == ["train.py"]


@pytest.mark.parametrize(
    "dependencies, expected",
    [
        (["torch>=2.7"], "2.7"),
        (["numpy", "torch >= 2.6.0, <3"], "2.6"),
        (["torchvision>=0.21", "torch~=2.5.1"], "2.5"),
        (['torch==2.6.0; python_version > "3.9"'], "2.6"),
        (["torch"], None),
        (["torch-geometric>=2.6", "torch_scatter>=2.1"], None),
        (["torch<2.6"], None),
    ],
)
def test_declared_torch_minimum_reads_the_lower_bound_of_torch_itself(tmp_path, dependencies, expected):
    from torchlint.config import declared_torch_minimum

    (tmp_path / "pyproject.toml").write_text(f"[project]\nname = 'p'\ndependencies = {dependencies!r}\n")
    assert declared_torch_minimum(tmp_path / "pyproject.toml") == expected


def test_a_project_requiring_torch_2_6_is_checked_for_that_torch(tmp_path, monkeypatch):
    """Like ruff's `requires-python`: with `torch>=2.7` declared and no target-torch set, a
    bare torch.load already defaults to weights_only=True (TL302 is quiet); the explicit
    setting, and --isolated, still win."""
    bare_load = "import torch\nstate = torch.load('ckpt.pt', map_location='cpu')\n"
    project(tmp_path, "[project]\nname = 'p'\ndependencies = ['torch>=2.7']\n", {"load.py": bare_load})
    assert findings(tmp_path, monkeypatch, "--select", "TL302", "--no-cache", ".") == []
    result = CliRunner().invoke(main, ["check", "--show-settings", "."], catch_exceptions=False)
    assert "2.7 (from" in result.output and "torch>=2.7" in result.output
    monkeypatch.setattr("torchlint.entrypoints.installed_version", lambda project: "2.4.1")
    isolated = findings(tmp_path, monkeypatch, "--select", "TL302", "--no-cache", "--isolated", ".")
    assert isolated == [("load.py", "TL302")]  # the pin is not read: the torch installed here is
    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = 'p'\ndependencies = ['torch>=2.7']\n[tool.torchlint]\ntarget-torch = '2.4'\n"
    )
    assert findings(tmp_path, monkeypatch, "--select", "TL302", "--no-cache", ".") == [("load.py", "TL302")]


def test_without_a_pin_tl302_judges_by_the_installed_torch_else_the_stable_one(tmp_path, monkeypatch):
    """No target-torch and no pin: the torch installed where torchlint runs decides (read from
    its metadata), and with none installed the current stable release; the message and
    --show-settings say which."""
    bare_load = "import torch\nstate = torch.load('ckpt.pt', map_location='cpu')\n"
    project(tmp_path, "[project]\nname = 'p'\n", {"load.py": bare_load})
    monkeypatch.setattr("torchlint.entrypoints.installed_version", lambda project: "2.4.1" if project == "torch" else None)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--select", "TL302", "--no-cache", "--output-format", "concise", "."])
    assert result.exit_code == 1 and "on torch < 2.6 (torch 2.4.1 installed here)" in result.output, result.output
    monkeypatch.setattr("torchlint.entrypoints.installed_version", lambda project: "2.7.0")
    assert findings(tmp_path, monkeypatch, "--select", "TL302", "--no-cache", ".") == []
    monkeypatch.setattr("torchlint.entrypoints.installed_version", lambda project: None)
    assert findings(tmp_path, monkeypatch, "--select", "TL302", "--no-cache", ".") == []
    settings = CliRunner().invoke(main, ["check", "--show-settings", "."], catch_exceptions=False).output
    assert "TL302 assumes 2.13 (no torch installed here and no pin in the project" in settings, settings


def test_the_installed_version_is_read_from_the_first_metadata_folder_on_the_path(tmp_path, monkeypatch):
    from torchlint.entrypoints import installed_version

    for folder, version in (("early", "2.4.1+cu121"), ("late", "2.9.0")):
        info = tmp_path / folder / f"torch-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n\nbody\n")
    (tmp_path / "early" / "torchvision-0.19.1.dist-info").mkdir()
    monkeypatch.setattr("sys.path", [str(tmp_path / "early"), str(tmp_path / "late")])
    assert installed_version("torch") == "2.4.1+cu121"
    assert installed_version("Torch") == "2.4.1+cu121"
    assert installed_version("torchaudio") is None


def test_a_requirements_file_pinning_torch_sets_the_target_torch_too(tmp_path, monkeypatch):
    """`requirements.txt` beside a pyproject that names no torch: its `torch>=2.7` (comments and
    torchvision aside) says the same as the dependency would; an older pin keeps TL302 on."""
    bare_load = "import torch\nstate = torch.load('ckpt.pt', map_location='cpu')\n"
    project(tmp_path, "[project]\nname = 'p'\n", {"load.py": bare_load})
    (tmp_path / "requirements.txt").write_text("torchvision>=0.1  # not torch\ntorch>=2.7  # the pin\n")
    assert findings(tmp_path, monkeypatch, "--select", "TL302", "--no-cache", ".") == []
    (tmp_path / "requirements.txt").write_text("torch>=2.1\n")
    assert findings(tmp_path, monkeypatch, "--select", "TL302", "--no-cache", ".") == [("load.py", "TL302")]


@pytest.mark.parametrize("boundary", [".git", "pyproject.toml", "shared"])
def test_a_config_planted_above_the_project_root_is_never_read(tmp_path, monkeypatch, boundary):
    """A shared ancestor (/tmp, a CI workspace's parent, a network home) is nobody's project:
    its torchlint.toml must not apply, let alone import its plugins, below a project root."""
    module = f"planted_{boundary.strip('.').replace('.', '_')}"
    (tmp_path / f"{module}.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').write('x')\n")
    (tmp_path / "torchlint.toml").write_text(f'plugins = ["{module}"]\nselect = ["TL302"]\n')
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    if boundary == ".git":
        (project / ".git").mkdir()
    elif boundary == "shared":  # no project root at all, below a folder like /tmp
        tmp_path.chmod(0o1777)
    else:
        (project / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (project / "src" / "a.py").write_text(BUGGY)
    monkeypatch.syspath_prepend(str(tmp_path))  # importable: only discovery may keep it out
    assert ("src/a.py", "TL301") in findings(project, monkeypatch, "src", cwd=project)
    assert not (tmp_path / "ran").exists()
    result = CliRunner().invoke(main, ["check", "--show-settings", "src"], catch_exceptions=False)
    assert "torchlint.toml" not in result.stdout


def test_a_lint_section_as_ruff_writes_it_is_read_like_the_table_itself(tmp_path, monkeypatch):
    project(tmp_path, '[tool.torchlint.lint]\nignore = ["TL301"]\n', {"a.py": BUGGY})
    assert findings(tmp_path, monkeypatch, ".") == []
    project(tmp_path, '[tool.torchlint]\n', {"a.py": BUGGY})
    assert findings(tmp_path, monkeypatch, ".") == [("a.py", "TL301")]
