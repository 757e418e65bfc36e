"""`[tool.torchlint]` in pyproject.toml (or a `torchlint.toml`) plus command-line flags -> one
frozen Config."""

from __future__ import annotations

import os
import re
import stat
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python < 3.11
    import tomli as tomllib

DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox",
    ".venv", ".vscode", ".torchlint_cache", "__pypackages__", "_build", "buck-out", "build",
    "dist", "node_modules", "site-packages", "venv",
)

#: Files a folder walk checks (a file named on the command line is checked whatever its name).
#: Notebooks are on by default; `include = ["*.py", "*.pyi"]` turns them off.
DEFAULT_INCLUDE = ("*.py", "*.pyi", "*.ipynb")

_LIST_KEYS = ("select", "extend-select", "ignore", "exclude", "extend-exclude", "include", "extend-include", "plugins", "fixable",
              "extend-fixable", "unfixable")
_BOOL_KEYS = ("respect-gitignore", "fix", "unsafe-fixes", "project-context")
_KNOWN_KEYS = set(_LIST_KEYS) | set(_BOOL_KEYS) | {"per-file-ignores", "target-torch", "cache-dir"}
#: The cache folder, in the project root unless `cache-dir` / `--cache-dir` says otherwise.
CACHE_DIR_NAME = ".torchlint_cache"


class ConfigError(Exception):
    """Invalid configuration or usage; reported without a traceback, exit code 2."""


@dataclass(frozen=True)
class Config:
    root: Path
    config_file: Path | None = None
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    include: tuple[str, ...] = DEFAULT_INCLUDE
    extend_include: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    plugins: tuple[str, ...] = ()
    respect_gitignore: bool = True
    force_exclude: bool = False
    target_torch: str | None = None
    #: Where `target_torch` came from when no configuration set it: the torch requirement a
    #: pyproject.toml declares (`--show-settings` names it).
    target_torch_source: str | None = None
    #: With no `target_torch`, the torch a bare `torch.load` is judged under (TL302): the one
    #: installed beside torchlint, else the current stable release; and what it came from.
    assumed_torch: str | None = None
    assumed_torch_source: str | None = None
    plugin_tables: Mapping[str, Any] = field(default_factory=dict)
    #: `fix = true`: apply safe fixes as if `--fix` were given; `unsafe-fixes = true`: unsafe too
    fix: bool = False
    unsafe_fixes: bool = False
    #: rules whose fixes may be applied: `fixable` (None: every rule) + `extend-fixable` - `unfixable`
    fixable: tuple[str, ...] | None = None
    extend_fixable: tuple[str, ...] = ()
    unfixable: tuple[str, ...] = ()
    cache_dir: Path | None = None
    #: `project-context = false`: a check of some files reads nothing else of their project
    #: (cross-file findings then depend on which files are given; see project_rest.py)
    project_context: bool = True
    #: the `--config KEY=VALUE` fragments applied over the file, as written
    overrides: tuple[str, ...] = ()

    def plugin_options(self, plugin: str) -> Mapping[str, Any]:
        return self.plugin_tables.get(plugin, {})

    @property
    def excludes(self) -> tuple[str, ...]:
        return self.exclude + self.extend_exclude

    @property
    def cache_folder(self) -> Path:
        return self.cache_dir if self.cache_dir is not None else self.root / CACHE_DIR_NAME

    @property
    def origin(self) -> str:
        """Where the settings came from, for error messages about their values."""
        parts = [str(self.config_file)] if self.config_file else []
        parts += [f"--config {text!r}" for text in self.overrides]
        return " + ".join(parts) or "command line"

    @property
    def includes(self) -> tuple[str, ...]:
        return self.include + self.extend_include


#: Standalone files, found before pyproject.toml in the same folder (as ruff finds
#: `.ruff.toml`, then `ruff.toml`, then `pyproject.toml`). Their keys sit at the top level.
STANDALONE_NAMES = (".torchlint.toml", "torchlint.toml")
_VERSION = re.compile(r"\d+(\.\d+){0,2}")


def find_config_file(start: Path) -> Path | None:
    """The nearest `.torchlint.toml`, `torchlint.toml`, or pyproject.toml with a
    [tool.torchlint] table, looking up from `start` no further than its project root."""
    for candidate_dir in project_folders(start):
        for name in STANDALONE_NAMES:
            if (candidate_dir / name).is_file():
                return candidate_dir / name
        candidate = candidate_dir / "pyproject.toml"
        if candidate.is_file():
            try:
                text = candidate.read_text(encoding="utf-8")
            except OSError:
                continue
            if "[tool.torchlint" in text or "tool.torchlint" in text or _names_torchlint_under_tool(text):
                return candidate
    return None


def _names_torchlint_under_tool(text: str) -> bool:
    """`[tool]` then `torchlint = ...` (or an inline table): a table the quick text test above
    misses, which must be read (and refused when it is no table) rather than ignored."""
    if "torchlint" not in text:
        return False
    try:
        tool = tomllib.loads(text).get("tool")
    except tomllib.TOMLDecodeError:
        return False
    return isinstance(tool, dict) and "torchlint" in tool


def project_folders(start: Path) -> list[Path]:
    """The folders a configuration may come from: `start`'s, then each one up to the project
    root, the first holding a pyproject.toml or a `.git` (a folder, or a worktree's file).
    A folder above it is nobody's project: a torchlint.toml planted in /tmp, a CI workspace's
    parent or a shared home would otherwise configure, and import plugins into, every check
    below it. Outside any project the walk also stops below a shared folder (/tmp: sticky
    and writable by anyone): whoever can plant a file there is not the one running the check."""
    try:
        start = start.resolve()
    except (OSError, RuntimeError):
        # A symbolic link loop (RuntimeError before Python 3.13, OSError after): look up from
        # the folder holding the link; the engine reports the path itself as not checkable.
        start = Path(os.path.abspath(start))
    directory = start if start.is_dir() else start.parent
    folders = []
    for folder in (directory, *directory.parents):
        if not os.path.lexists(folder):
            continue  # an unsaved buffer's folder (`--stdin-filename new/dir/x.py`): look above it
        if _shared(folder):
            break
        folders.append(folder)
        if (folder / "pyproject.toml").is_file() or os.path.lexists(folder / ".git"):
            break
    return folders


def shared_folder(folder: Path) -> bool:
    """Whether anyone may plant files in ``folder`` (sticky and world-writable, as /tmp)."""
    return _shared(folder)


def _shared(folder: Path) -> bool:
    try:
        mode = folder.stat().st_mode
    except OSError:
        return True  # what cannot be looked at cannot be vouched for
    return bool(mode & stat.S_IWOTH and mode & stat.S_ISVTX)


#: `torch>=2.7`, `torch ~= 2.6.0`, `torch[opt] >=2.6, <3 ; python_version > "3.9"`
_TORCH_REQUIREMENT = re.compile(r"^\s*torch\s*(?:\[[^\]]*\])?\s*(?P<spec>[^;]*)", re.IGNORECASE)
_LOWER_BOUND = re.compile(r"(?:>=|~=|===?|>)\s*(?P<version>\d+(?:\.\d+){0,2})")


def _lower_bounds(requirement: str) -> list[tuple[int, ...]]:
    """The lower bounds one requirement puts on torch itself (none for torchvision & co)."""
    match = _TORCH_REQUIREMENT.match(requirement)
    if match is None or re.match(r"^\s*torch[\w.-]", requirement, re.IGNORECASE):
        return []  # not torch itself (torchvision, torch-geometric, torch_scatter)
    return [tuple(int(part) for part in bound.group("version").split(".")) for bound in _LOWER_BOUND.finditer(match.group("spec"))]


def _oldest_allowed(bounds: list[tuple[int, ...]]) -> str | None:
    """The oldest torch every lower bound allows, as "major.minor" (None without a bound)."""
    return ".".join(str(part) for part in max(bounds)[:2]) if bounds else None


def declared_torch_minimum(pyproject: Path) -> str | None:
    """The oldest torch a pyproject.toml's `[project] dependencies` allow (`torch>=2.7` ->
    "2.7"), or None when it declares no lower bound. Like ruff reading `requires-python` for
    its target version: the project says which torch its code must run on."""
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    project = data.get("project")
    dependencies = project.get("dependencies") if isinstance(project, dict) else None
    if not isinstance(dependencies, list):
        return None
    found = [bound for requirement in dependencies if isinstance(requirement, str) for bound in _lower_bounds(requirement)]
    return _oldest_allowed(found)


def with_declared_torch(config: Config, start: Path) -> Config:
    """`config` with `target_torch` taken from the nearest pyproject.toml up from `start` when
    no configuration sets it (the config file's own folder when there is one), or from the
    `requirements*.txt` beside it (`torch>=2.7`, as pip reads them): the oldest torch the
    project says its code runs on."""
    if config.target_torch is not None:
        return config
    for folder in project_folders(config.config_file.parent if config.config_file is not None else start):
        pyproject = folder / "pyproject.toml"
        minimum = declared_torch_minimum(pyproject) if pyproject.is_file() else None
        if minimum is not None:
            return replace(config, target_torch=minimum, target_torch_source=f"{pyproject}: torch>={minimum}")
        pinned = _pinned_in_requirements(folder)
        if pinned is not None:
            minimum, requirements = pinned
            return replace(config, target_torch=minimum, target_torch_source=f"{requirements}: torch>={minimum}")
        if pyproject.is_file():
            return config  # the project's own root says nothing of torch
    return config


#: The newest stable torch release: what a project that neither pins torch nor has it
#: installed where torchlint runs is taken to run under.
CURRENT_STABLE_TORCH = "2.13"


def with_assumed_torch(config: Config) -> Config:
    """`config` with the torch its code is taken to run under when nothing sets `target_torch`
    (no configuration, no pin in the project): the torch distribution installed where
    torchlint runs, read from its metadata without importing it, else the current stable
    release. Only what depends on the default of a call (TL302: `torch.load`'s weights_only)
    asks for it; what would make a fix safe or a rule quiet on purpose still needs the
    project to say which torch it runs on."""
    if config.target_torch is not None:
        return config
    from torchlint.entrypoints import installed_version

    installed = installed_version("torch")
    match = re.match(r"(\d+)\.(\d+)", installed or "")
    if match is not None:
        return replace(config, assumed_torch=f"{match[1]}.{match[2]}", assumed_torch_source=f"torch {installed} installed here")
    return replace(config, assumed_torch=CURRENT_STABLE_TORCH,
                   assumed_torch_source="no torch installed here and no pin in the project: the current stable release")


def _pinned_in_requirements(folder: Path) -> tuple[str, Path] | None:
    """The oldest torch `folder`'s requirements files allow, and the file that says so."""
    from torchlint.bounded_read import Unreadable, read_limited

    for requirements in sorted(folder.glob("requirements*.txt")):
        try:
            lines = read_limited(requirements, 1 << 20).decode("utf-8", "replace").splitlines()
        except Unreadable:
            continue
        oldest = _oldest_allowed([bound for line in lines for bound in _lower_bounds(line.split("#", 1)[0])])
        if oldest is not None:
            return oldest, requirements
    return None


def load_config(config_file: Path | None, *, cwd: Path, overrides: Iterable[tuple[str, dict[str, Any]]] = ()) -> Config:
    """The file's table (none: defaults rooted at `cwd`), with each `--config KEY=VALUE`
    override (its text and its parsed table) laid over it, later ones winning."""
    overrides = list(overrides)
    table = _read_table(config_file) if config_file is not None else {}
    root = config_file.parent.resolve() if config_file is not None else cwd.resolve()
    for text, override in overrides:
        _config_from_table(override, where=f"--config {text!r}:", root=root)  # its own errors, named
        table = merge_tables(table, override)
    where = f"{config_file}: [tool.torchlint]" if config_file is not None else "--config"
    config = _config_from_table(table, where=where, root=root, config_file=config_file)
    return replace(config, overrides=tuple(text for text, _ in overrides))


def merge_tables(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`override`'s keys replace `base`'s; a plugin's table is merged key by key, so
    `--config "myplugin.option = 1"` keeps the plugin's other options."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict) and key != "per-file-ignores":
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


#: No configuration is this big; a planted one (a link to /dev/zero) is not read.
MAX_CONFIG_BYTES = 10 * 1024 * 1024


def _read_table(config_file: Path) -> dict[str, Any]:
    from torchlint.bounded_read import Unreadable, read_limited

    try:
        raw = read_limited(config_file, MAX_CONFIG_BYTES)
    except Unreadable as exc:
        raise ConfigError(str(exc)) from exc
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{config_file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{config_file}: invalid TOML: {exc}") from exc
    tool = data.get("tool")
    if config_file.name == "pyproject.toml":
        table = tool.get("torchlint", {}) if isinstance(tool, dict) else {}
    elif isinstance(tool, dict) and "torchlint" in tool:
        # `--config other.toml` holding `[tool.torchlint]`, as a pyproject.toml would
        others = sorted(key for key in data if key != "tool")
        if others:
            raise ConfigError(f"{config_file}: holds both [tool.torchlint] and top-level keys ({', '.join(others)}); use one")
        table = tool["torchlint"]
    else:
        table = data
    if not isinstance(table, dict):
        raise ConfigError(f"{config_file}: [tool.torchlint] must be a table")
    return table


#: Keys of ruff's that have no meaning here, with what to write instead.
_RUFF_ONLY_KEYS = {
    "extend": "torchlint reads one configuration, the nearest [tool.torchlint] (or --config PATH); "
    "copy the settings you share into it, or pass `--config ../pyproject.toml`",
}


def _lint_section(table: dict[str, Any], where: str) -> dict[str, Any]:
    """ruff's `[tool.ruff.lint]` habit: `[tool.torchlint.lint]` holds the same keys as
    `[tool.torchlint]` itself (torchlint only lints), merged into it. A key set in both is a
    mistake to fix, not a precedence to guess."""
    lint = table.get("lint")
    if not isinstance(lint, dict):
        return table
    merged = {key: value for key, value in table.items() if key != "lint"}
    for key, value in lint.items():
        if key in merged:
            raise ConfigError(f"{where} {key!r} is set both in [tool.torchlint] and in [tool.torchlint.lint]; keep one")
        merged[key] = value
    return merged


def _config_from_table(table: dict[str, Any], *, where: str, root: Path, config_file: Path | None = None) -> Config:
    values: dict[str, Any] = {}
    plugin_tables = {}
    table = _lint_section(table, where)
    for key, value in table.items():
        if key in _RUFF_ONLY_KEYS:
            raise ConfigError(f"{where} {key!r} is ruff's, not torchlint's: {_RUFF_ONLY_KEYS[key]}")
        if isinstance(value, dict) and key != "per-file-ignores":
            plugin_tables[key] = value  # [tool.torchlint.<plugin>]
            continue
        if key not in _KNOWN_KEYS:
            import difflib

            close = difflib.get_close_matches(key, sorted(_KNOWN_KEYS), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            known = ", ".join(sorted(_KNOWN_KEYS))
            raise ConfigError(f"{where} unknown key {key!r} ({hint}known keys: {known})")
        if key in _LIST_KEYS:
            values[key.replace("-", "_")] = _string_list(value, f"{where} {key}")
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise ConfigError(f"{where} per-file-ignores must be a table of glob = [codes]")
            values["per_file_ignores"] = tuple(
                (pattern, _string_list(codes, f"{where} per-file-ignores.{pattern!r}"))
                for pattern, codes in value.items()
            )
        elif key in _BOOL_KEYS:
            if not isinstance(value, bool):
                raise ConfigError(f"{where} {key} must be true or false, not {value!r}")
            values[key.replace("-", "_")] = value
        elif key == "target-torch":
            values["target_torch"] = check_version(value, f"{where} target-torch")
        elif key == "cache-dir":
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{where} cache-dir must be a folder path string, not {value!r}")
            # relative to the folder holding the configuration, as `exclude` patterns are
            folder = root / Path(value).expanduser()
            if config_file is not None and not _within(folder, root):
                # A checked tree's own file must not make torchlint write outside the tree (a
                # pull request's `cache-dir = "../../.ssh"`); the user's flag may.
                raise ConfigError(f"{where} cache-dir {value!r} is outside the project ({root}); a configuration file "
                                  "keeps the cache inside it (use --cache-dir or TORCHLINT_CACHE_DIR for a folder elsewhere)")
            values["cache_dir"] = folder
    return Config(root=root, config_file=config_file, plugin_tables=plugin_tables, **values)


def _within(folder: Path, root: Path) -> bool:
    real, top = os.path.realpath(folder), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def check_version(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _VERSION.fullmatch(value):
        raise ConfigError(f"{where} must be a version string like \"2.4\", not {value!r}")
    return value


def _string_list(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        raise ConfigError(f"{where} must be a list of strings, like [{value!r}], not the string {value!r}")
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where} must be a list of strings, not {value!r}")
    return tuple(value)


#: Command-line flags that replace the file's value, and those that extend its list.
_REPLACING = ("select", "exclude", "fixable")
_EXTENDING = ("extend_select", "ignore", "extend_exclude", "per_file_ignores", "extend_fixable", "unfixable")


def with_cli(config: Config, **overrides: Any) -> Config:
    """Command-line flags win over the file: select/exclude/fixable replace (`--select` the
    file's extend-select too), ignores and excludes extend, a flag left out (None) keeps the
    file's value."""
    changes: dict[str, Any] = {}
    for key in _REPLACING:
        if overrides.get(key):
            changes[key] = tuple(overrides[key])
    for key in _EXTENDING:
        if overrides.get(key):
            changes[key] = getattr(config, key) + tuple(overrides[key])
    if overrides.get("select"):
        # `--select` replaces the configured set, the file's `extend-select` too (as ruff's does)
        changes["extend_select"] = tuple(overrides.get("extend_select") or ())
    if overrides.get("force_exclude"):
        changes["force_exclude"] = True
    if overrides.get("target_torch") is not None:
        changes["target_torch"] = check_version(overrides["target_torch"], "--target-torch")
    for key in ("fix", "unsafe_fixes", "project_context"):
        if overrides.get(key) is not None:
            changes[key] = overrides[key]
    if overrides.get("cache_dir") is not None:
        changes["cache_dir"] = Path(overrides["cache_dir"]).expanduser().absolute()
    return replace(config, **changes)


def split_selectors(values: Iterable[str]) -> list[str]:
    """`--select TL1,TL301 --select TL2` -> ['TL1', 'TL301', 'TL2']."""
    out = []
    for value in values:
        out.extend(part.strip() for part in value.split(",") if part.strip())
    return out


def split_config_arguments(values: Iterable[str]) -> tuple[Path | None, list[tuple[str, dict[str, Any]]]]:
    """`--config` values, as ruff reads them: an existing file is the configuration file (one
    at most); anything else must be a TOML `key = value` fragment overriding it."""
    config_file: Path | None = None
    overrides: list[tuple[str, dict[str, Any]]] = []
    for value in values:
        if "=" not in value and os.path.exists(value) and not Path(value).is_file():
            raise ConfigError(f"--config {value!r}: not a regular file (a configuration is a TOML file); not read")
        if Path(value).is_file():
            if config_file is not None:
                raise ConfigError(f"--config {value!r}: one configuration file only (already {str(config_file)!r})")
            config_file = Path(value)
            continue
        try:
            table = tomllib.loads(value)
        except tomllib.TOMLDecodeError as exc:
            if "=" not in value:
                raise ConfigError(f"{value}: no such configuration file") from exc
            raise ConfigError(
                f"--config {value!r} is neither an existing file nor a TOML `key = value` override ({exc})"
            ) from exc
        if not table:
            raise ConfigError(f"--config {value!r}: empty override; give `key = value`, e.g. --config \"select = ['TL1']\"")
        overrides.append((value, table))
    return config_file, overrides


def parse_per_file_ignores(values: Iterable[str]) -> list[tuple[str, tuple[str, ...]]]:
    """`--per-file-ignores "tests/*:TL301,TL302"` -> [("tests/*", ("TL301", "TL302"))]. The
    last colon separates, so a pattern may hold one (`C:/src/*.py:TL3`)."""
    out = []
    for value in values:
        pattern, colon, codes = value.rpartition(":")
        selectors = tuple(split_selectors([codes]))
        if not colon or not pattern or not selectors:
            raise ConfigError(f"--per-file-ignores {value!r}: expected GLOB:CODES, like \"tests/*:TL301,TL302\"")
        out.append((pattern, selectors))
    return out
