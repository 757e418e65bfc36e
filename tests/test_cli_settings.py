"""Settings from the command line, as ruff users give them: `--config KEY=VALUE`, `--exclude`,
`--per-file-ignores`, `--target-torch`, fixability, case-insensitive selectors with
suggestions, the cache folder and `torchlint clean`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from torchlint.cli import main

BUGGY = "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nstate = torch.load('ckpt.pt', weights_only=True)\n"
# TL502 has a safe fix, TL302 an unsafe one; TL301 is off (no CUDA named)
FIXABLE = "import torch\ny = torch.ger(x, x)\nz = torch.load('a.pt')\n"


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TORCHLINT_CACHE_DIR", raising=False)

    def invoke(*args, env=None):
        return CliRunner().invoke(main, list(args), catch_exceptions=False, env=env)

    return invoke


def codes(result) -> list[tuple[str, str]]:
    assert result.exit_code in (0, 1), result.output
    return sorted((d["filename"], d["code"]) for d in json.loads(result.stdout))


def settings(result) -> dict[str, str]:
    assert result.exit_code == 0, result.output
    return {line[:20].strip(): line[20:] for line in result.stdout.splitlines()}


# -- --config KEY=VALUE --------------------------------------------------------------------


def test_a_config_override_wins_over_the_file(run, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nselect = ["TL302"]\ntarget-torch = "2.5"\n')
    (tmp_path / "a.py").write_text("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nstate = torch.load('ckpt.pt')\n")
    assert codes(run("check", "--output-format", "json", "a.py")) == [("a.py", "TL302")]
    overridden = run("check", "--output-format", "json", "--config", "select = ['TL301']", "a.py")
    assert codes(overridden) == [("a.py", "TL301")]
    # a file and overrides together; the later override wins
    (tmp_path / "other.toml").write_text('ignore = ["TL302"]\n')
    both = run("check", "--output-format", "json", "--config", "other.toml", "--config", "select = ['TL3']", "--config", "select = ['TL302']", "a.py")
    assert codes(both) == []


def test_select_on_the_command_line_replaces_the_files_extend_select_too(run, tmp_path):
    """As ruff's: `--select TL302` checks TL302 only, whatever the file adds; `--extend-select` adds to it."""
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nextend-select = ["TL402"]\ntarget-torch = "2.5"\n')
    (tmp_path / "a.py").write_text("import torch\ny = torch.exp(x) - 1\nstate = torch.load('ckpt.pt', map_location='cpu')\n")
    assert codes(run("check", "--output-format", "json", "a.py")) == [("a.py", "TL302"), ("a.py", "TL402")]
    assert codes(run("check", "--output-format", "json", "--select", "TL302", "a.py")) == [("a.py", "TL302")]
    both = run("check", "--output-format", "json", "--select", "TL302", "--extend-select", "TL402", "a.py")
    assert codes(both) == [("a.py", "TL302"), ("a.py", "TL402")]


def test_config_overrides_show_in_show_settings(run, tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    shown = settings(run("check", "--show-settings", "--config", "select = ['tl4']", "--config", "unsafe-fixes = true", "."))
    assert shown["overrides"] == "select = ['tl4']; unsafe-fixes = true"
    assert shown["enabled rules"] == "TL406"  # a prefix enables the default-on rules under it
    assert shown["unsafe-fixes"] == "true"


@pytest.mark.parametrize(
    "argument,message",
    [
        ("missing.toml", "missing.toml: no such configuration file"),
        ("selct = ['TL1']", "--config \"selct = ['TL1']\": unknown key 'selct' (did you mean 'select'?"),
        ("select = 'TL1'", "must be a list of strings"),
        ("select = [TL1", "is neither an existing file nor a TOML `key = value` override"),
        ("select = ['TL99x']", "unknown rule selector 'TL99x'"),
    ],
)
def test_bad_config_arguments_are_usage_errors(run, tmp_path, argument, message):
    (tmp_path / "a.py").write_text("x = 1\n")
    result = run("check", "--config", argument, "a.py")
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_two_config_files_are_an_error(run, tmp_path):
    (tmp_path / "one.toml").write_text("")
    (tmp_path / "two.toml").write_text("")
    result = run("check", "--config", "one.toml", "--config", "two.toml", ".")
    assert result.exit_code == 2 and "one configuration file only" in result.output


def test_isolated_still_takes_overrides(run, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nselect = ["TL302"]\n')
    (tmp_path / "a.py").write_text("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nstate = torch.load('ckpt.pt')\n")
    result = run("check", "--isolated", "--output-format", "json", "--config", "ignore = ['TL302']", "a.py")
    assert codes(result) == [("a.py", "TL301")]


# -- --exclude, --per-file-ignores, --target-torch -------------------------------------------


def test_exclude_replaces_the_configured_and_default_excludes(run, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nexclude = ["legacy"]\nextend-exclude = ["gen"]\n')
    for folder in ("legacy", "gen", "build", "vendored"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.py").write_text(BUGGY)
    files = lambda *args: sorted(run("check", "--show-files", *args, ".").stdout.split())  # noqa: E731
    assert files() == ["build/m.py", "vendored/m.py"]  # the file's exclude replaced the defaults
    # --exclude replaces `exclude`; `extend-exclude` from the file still applies
    assert files("--exclude", "vendored") == ["build/m.py", "legacy/m.py"]
    shown = settings(run("check", "--show-settings", "--exclude", "vendored", "--extend-exclude", "x*"))
    assert shown["exclude"] == "vendored" and shown["extend-exclude"] == "gen, x*"


def test_per_file_ignores_from_the_command_line_extend_the_file(run, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nper-file-ignores = { "tests/*" = ["TL301"] }\n')
    for name in ("tests/t.py", "scripts/s.py", "src/m.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(BUGGY)
    assert codes(run("check", "--output-format", "json", ".")) == [("scripts/s.py", "TL301"), ("src/m.py", "TL301")]
    result = run("check", "--output-format", "json", "--per-file-ignores", "scripts/*:tl3,TL002", ".")
    assert codes(result) == [("src/m.py", "TL301")]
    shown = settings(run("check", "--show-settings", "--per-file-ignores", "scripts/*:TL301"))
    assert shown["per-file-ignores"] == "tests/* = TL301; scripts/* = TL301"
    for bad in ("scripts/*", "scripts/*:", ":TL301"):
        failed = run("check", "--per-file-ignores", bad, ".")
        assert failed.exit_code == 2 and "expected GLOB:CODES" in failed.output


def test_target_torch_from_the_command_line(run, tmp_path):
    # the `torch.amp` spelling exists from 2.4 on: only then is its fix safe
    (tmp_path / "amp.py").write_text("import torch\nscaler = torch.cuda.amp.GradScaler()\n")

    def applicability(*args):
        data = json.loads(run("check", "--no-cache", "--output-format", "json", *args, "amp.py").stdout)
        return [(d["code"], d["fix"]["applicability"]) for d in data]

    assert applicability() == [("TL504", "unsafe")]
    assert applicability("--target-torch", "2.4") == [("TL504", "safe")]
    assert settings(run("check", "--show-settings", "--target-torch", "2.4"))["target-torch"] == "2.4"
    bad = run("check", "--target-torch", "banana", "amp.py")
    assert bad.exit_code == 2 and "--target-torch must be a version string" in bad.output


# -- fixability ----------------------------------------------------------------------------


def test_unfixable_rules_offer_and_apply_no_fix(run, tmp_path):
    (tmp_path / "a.py").write_text(FIXABLE)
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\ntarget-torch = "2.5"\n')  # TL302 applies
    listed = json.loads(run("check", "--output-format", "json", "--unfixable", "deprecated-torch-function", "a.py").stdout)
    fixes = {d["code"]: d["fix"] for d in listed}
    assert fixes["TL502"] is None and fixes["TL302"] is not None  # only the unfixable rule lost its fix
    result = run("check", "--fix", "--unfixable", "TL5", "a.py")
    assert result.exit_code == 1 and "[*]" not in result.output  # TL302's unsafe fix is all that is left
    assert (tmp_path / "a.py").read_text() == FIXABLE


def test_fixable_and_extend_fixable(run, tmp_path):
    (tmp_path / "a.py").write_text(FIXABLE)
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nfixable = ["TL3"]\n')
    run("check", "--fix", "a.py")
    assert (tmp_path / "a.py").read_text() == FIXABLE  # TL502 is not in `fixable`
    run("check", "--fix", "--extend-fixable", "TL502", "a.py")
    assert "torch.outer(x, x)" in (tmp_path / "a.py").read_text()
    shown = settings(run("check", "--show-settings", "--extend-fixable", "TL502", "--unfixable", "TL301"))
    assert shown["fixable"] == "TL3" and shown["extend-fixable"] == "TL502" and shown["unfixable"] == "TL301"
    assert "TL301" not in shown["fixable rules"] and "TL502" in shown["fixable rules"]


def test_unfixable_in_the_configuration(run, tmp_path):
    (tmp_path / "a.py").write_text(FIXABLE)
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nunfixable = ["TL502"]\nfix = true\n')
    run("check", "a.py")
    assert (tmp_path / "a.py").read_text() == FIXABLE


def test_fix_true_in_the_configuration_fixes_and_no_fix_overrides_it(run, tmp_path):
    (tmp_path / "a.py").write_text(FIXABLE)
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\nfix = true\n")
    result = run("check", "--no-fix", "a.py")
    assert "[*] 1 fixable with --fix" in result.output and (tmp_path / "a.py").read_text() == FIXABLE
    diff = run("check", "--diff", "a.py")  # --diff writes nothing, whatever the configuration says
    assert "+y = torch.outer(x, x)" in diff.stdout and (tmp_path / "a.py").read_text() == FIXABLE
    result = run("check", "a.py")
    assert "(1 fixed)" in result.output and "torch.outer(x, x)" in (tmp_path / "a.py").read_text()


def test_unsafe_fixes_true_in_the_configuration_and_no_unsafe_fixes(run, tmp_path):
    (tmp_path / "a.py").write_text(BUGGY)
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\nfix = true\nunsafe-fixes = true\n")
    run("check", "--no-unsafe-fixes", "a.py")
    assert (tmp_path / "a.py").read_text() == BUGGY  # TL301's fix is unsafe
    run("check", "a.py")
    assert 'map_location="cpu"' in (tmp_path / "a.py").read_text()


@pytest.mark.parametrize("table,message", [("fix = 1", "fix must be true or false"), ('unfixable = ["TL9x"]', "unknown rule selector 'TL9x'")])
def test_bad_fix_settings_are_errors(run, tmp_path, table, message):
    (tmp_path / "pyproject.toml").write_text(f"[tool.torchlint]\n{table}\n")
    (tmp_path / "a.py").write_text(FIXABLE)
    result = run("check", "a.py")
    assert result.exit_code == 2 and message in result.output


# -- selectors -------------------------------------------------------------------------------


@pytest.mark.parametrize("selector", ["tl301", "Tl3", "LOAD-WITHOUT-MAP-LOCATION", "Load-Without-Map-Location", "all"])
def test_selectors_are_case_insensitive(run, tmp_path, selector):
    (tmp_path / "a.py").write_text(BUGGY)
    assert run("check", "-q", "--ignore", selector, "a.py").exit_code == 0
    assert run("check", "-q", "--select", selector, "a.py").exit_code == 1


@pytest.mark.parametrize(
    "selector,suggested",
    [("TL31", "TL301 (load-without-map-location)"), ("load-without-map-locaton", "TL301 (load-without-map-location)"),
     ("tensor-without-devce", "TL201 (tensor-without-device)")],
)
def test_an_unknown_selector_suggests_the_closest_rule(run, tmp_path, selector, suggested):
    (tmp_path / "a.py").write_text(BUGGY)
    result = run("check", "--select", selector, "a.py")
    assert result.exit_code == 2 and f"did you mean {suggested}?" in result.output
    (tmp_path / "pyproject.toml").write_text(f'[tool.torchlint]\nignore = ["{selector}"]\n')
    result = run("check", "a.py")
    assert result.exit_code == 2 and "pyproject.toml" in result.output and f"did you mean {suggested}?" in result.output


def test_a_selector_like_nothing_gets_no_suggestion(run, tmp_path):
    (tmp_path / "a.py").write_text(BUGGY)
    result = run("check", "--select", "XYZ123", "a.py")
    assert result.exit_code == 2 and "did you mean" not in result.output and "torchlint rules" in result.output


def test_rule_lookup_ignores_case_and_suggests(run):
    assert run("rule", "Load-Without-Map-Location").output.startswith("# TL301")
    result = run("rule", "load-without-map-locaton")
    assert result.exit_code == 2 and "did you mean TL301 (load-without-map-location)?" in result.output


# -- the cache folder and `torchlint clean` ---------------------------------------------------


def _entries(folder):
    return sorted(p for p in folder.rglob("*.json"))


def test_cache_dir_from_the_flag_the_environment_and_the_configuration(run, tmp_path):
    (tmp_path / "a.py").write_text(BUGGY)
    run("check", "--cache-dir", "flagged", "a.py")
    assert _entries(tmp_path / "flagged") and not (tmp_path / ".torchlint_cache").exists()
    run("check", "a.py", env={"TORCHLINT_CACHE_DIR": str(tmp_path / "from_env")})
    assert _entries(tmp_path / "from_env")
    (tmp_path / "sub").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\ncache-dir = "caches/lint"\n')
    run("check", "a.py")
    assert _entries(tmp_path / "caches" / "lint")
    # the flag outranks the environment, which outranks the configuration
    shown = settings(run("check", "--show-settings", "--cache-dir", "flagged", env={"TORCHLINT_CACHE_DIR": "env"}))
    assert shown["cache-dir"] == str(tmp_path / "flagged")
    shown = settings(run("check", "--show-settings", env={"TORCHLINT_CACHE_DIR": str(tmp_path / "env")}))
    assert shown["cache-dir"] == str(tmp_path / "env")
    assert settings(run("check", "--show-settings"))["cache-dir"] == str(tmp_path / "caches" / "lint")
    bad = run("check", "--config", "cache-dir = 3", "a.py")
    assert bad.exit_code == 2 and "cache-dir must be a folder path" in bad.output


def test_clean_removes_the_cache_folders_and_says_which(run, tmp_path):
    (tmp_path / "a.py").write_text(BUGGY)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text("[tool.torchlint]\n")
    (tmp_path / "sub" / "b.py").write_text(BUGGY)
    run("check", "a.py")
    run("check", "sub/b.py")  # sub/ is its own project, with its own cache
    assert (tmp_path / ".torchlint_cache").is_dir() and (tmp_path / "sub" / ".torchlint_cache").is_dir()
    result = run("clean")
    assert result.exit_code == 0
    assert result.output.splitlines() == ["Removed .torchlint_cache", "Removed sub/.torchlint_cache"]
    assert not (tmp_path / ".torchlint_cache").exists() and not (tmp_path / "sub" / ".torchlint_cache").exists()
    assert (tmp_path / "a.py").exists()
    assert run("clean").output == "No cache to remove.\n"


def test_clean_removes_a_configured_cache_dir_but_never_a_folder_torchlint_did_not_make(run, tmp_path):
    (tmp_path / "a.py").write_text(BUGGY)
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\ncache-dir = "lint-cache"\n')
    run("check", "a.py")
    assert run("clean").output == "Removed lint-cache\n" and not (tmp_path / "lint-cache").exists()
    # a cache-dir set by mistake to a source folder
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "model.py").write_text(BUGGY)
    result = run("clean", "--cache-dir", "src")
    assert "src is not a torchlint cache folder; nothing in it removed" in result.output
    assert (tmp_path / "src" / "model.py").exists()


def test_clean_reads_the_settings_without_importing_plugins(run, tmp_path):
    (tmp_path / "evil.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').write('x')\n")
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nplugins = ["evil"]\ncache-dir = "c"\n')
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "CACHEDIR.TAG").write_text(
        "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by torchlint.\n"
    )
    result = run("clean", "--config", "cache-dir = 'c'")
    assert result.output == "Removed c\n" and not (tmp_path / "ran").exists()


def test_every_option_of_every_command_has_help_text():
    import click

    for name, command in main.commands.items():
        if name == "run":
            continue  # the runtime half's own options; not this front door's
        undocumented = [p.name for p in command.params if isinstance(p, click.Option) and not p.help]
        assert undocumented == [], (name, undocumented)


def test_an_override_naming_no_plugin_says_where_it_came_from(run, tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    result = run("check", "--config", "nosuchplugin.option = 1", "a.py")
    assert result.exit_code == 2
    assert "--config 'nosuchplugin.option = 1': [tool.torchlint.nosuchplugin] names no plugin" in result.output


def test_an_override_merges_into_a_plugin_table_and_replaces_other_keys():
    from torchlint.config import merge_tables

    base = {"select": ["TL1"], "myplugin": {"a": 1, "b": 2}, "per-file-ignores": {"x.py": ["TL301"]}}
    override = {"select": ["TL3"], "myplugin": {"b": 3}, "per-file-ignores": {"y.py": ["TL302"]}}
    assert merge_tables(base, override) == {
        "select": ["TL3"], "myplugin": {"a": 1, "b": 3}, "per-file-ignores": {"y.py": ["TL302"]}
    }
    assert base["myplugin"] == {"a": 1, "b": 2}  # the file's table is not edited in place
