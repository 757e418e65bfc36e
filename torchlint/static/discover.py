"""Turn command-line paths into the list of files to check.

Folders are walked (not following symlinked folders, so loops cannot happen); default and
configured excludes and .gitignore files prune the walk; `include` globs (Python files and
Jupyter notebooks by default) pick the files in it. A path named explicitly is checked
even if excluded, unless `--force-exclude` (what pre-commit passes) is given.
"""

from __future__ import annotations

import errno
import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

from torchlint.config import Config
from torchlint.static.gitignore import GitIgnore

PYTHON_SUFFIXES = (".py", ".pyi")


def is_included(path: Path, config: Config) -> bool:
    """Whether a folder walk checks this file: its name (or root-relative path) matches an
    `include`/`extend-include` glob (`*.py`, `*.pyi` and `*.ipynb` by default)."""
    relative = _relative_to_root(path, config.root)
    return any(fnmatch.fnmatch(path.name, pattern) or fnmatch.fnmatch(relative, pattern) for pattern in config.includes)


@dataclass(frozen=True)
class Discovered:
    path: Path  # as found, for reading
    display: str  # as shown to the user
    problem: str | None = None  # set when the path cannot be checked at all


def _display(path: Path, cwd: Path) -> str:
    try:
        return path.absolute().relative_to(cwd).as_posix()
    except ValueError:
        return path.as_posix()


def _relative_to_root(path: Path, root: Path) -> str:
    try:
        return path.absolute().relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def is_excluded(path: Path, config: Config, base: Path | None = None) -> bool:
    """Exclude patterns match a path component's name or the root-relative path.

    Only components below `base` (the folder the user named) count: checking
    `.venv/lib/site-packages/torch` on purpose must not be excluded by `site-packages`."""
    relative = _relative_to_root(path, config.root)
    if base is not None:
        below = _relative_to_root(path, base.absolute())
        parts = below.split("/") if below != path.as_posix() else relative.split("/")
    else:
        parts = relative.split("/")
    for pattern in config.excludes:
        if "/" in pattern.rstrip("/"):
            if fnmatch.fnmatch(relative, pattern.rstrip("/")) or fnmatch.fnmatch(relative, pattern.rstrip("/") + "/*"):
                return True
        elif any(fnmatch.fnmatch(part, pattern.rstrip("/")) for part in parts):
            return True
    return False


def _dangling(link: Path) -> str:
    """Why a symbolic link that leads nowhere cannot be checked."""
    try:
        os.stat(link)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symbolic link loop"
    return "broken symbolic link"


def _root_gitignore(config: Config) -> GitIgnore | None:
    """The .gitignore files of the project root and of the folders above it, up to the
    repository's top."""
    if not config.respect_gitignore:
        return None
    gitignore = GitIgnore()
    for directory in (config.root, *config.root.parents):
        gitignore.load_dir(directory)
        if (directory / ".git").exists():
            break
    return gitignore


def force_excluded(path: Path, config: Config) -> bool:
    """Whether `--force-exclude` drops `path`, a name given on the command line (a
    `--stdin-filename` need not exist): a configured exclude or a .gitignore names it."""
    if is_excluded(path, config):
        return True
    gitignore = _root_gitignore(config)
    if gitignore is None:
        return False
    absolute = path.absolute()
    # A walk would never enter an ignored folder: test each folder from the root down.
    for folder in reversed(absolute.parents):
        if config.root in folder.parents:
            if gitignore.ignored(folder, True):
                return True
            gitignore.load_dir(folder)
    return gitignore.ignored(absolute, path.is_dir())


def discover(paths: list[Path], config: Config, *, cwd: Path) -> list[Discovered]:
    cwd = cwd.absolute()
    found: dict[str, Discovered] = {}
    gitignore = _root_gitignore(config)

    def add(item: Discovered) -> None:
        found.setdefault(os.path.normpath(str(item.path.absolute())), item)

    for given in paths:
        display = _display(given, cwd)
        if given.is_symlink() and not given.exists():
            add(Discovered(given, display, _dangling(given)))
            continue
        if not given.exists():
            add(Discovered(given, display, "no such file or directory"))
            continue
        if config.force_exclude and (is_excluded(given, config) or (gitignore and gitignore.ignored(given.absolute(), given.is_dir()))):
            continue
        if given.is_dir():
            for item in _walk(given, config, gitignore, cwd):
                add(item)
        else:
            add(Discovered(given, display))
    return sorted(found.values(), key=lambda item: item.display)


def walk_files(top: Path, config: Config, *, cwd: Path):
    """The files a check of the folder `top` finds (excludes, .gitignore, includes), one at a
    time, in walk order: a caller reading a whole project can stop at a bound."""
    return _walk(top, config, _root_gitignore(config), cwd)


def _walk(top: Path, config: Config, gitignore: GitIgnore | None, cwd: Path):
    def on_error(error: OSError) -> None:
        errors.append(error)

    errors: list[OSError] = []
    for dirpath, dirnames, filenames in os.walk(top, onerror=on_error, followlinks=False):
        directory = Path(dirpath)
        if gitignore is not None:
            gitignore.load_dir(directory.absolute())
        kept = []
        for name in sorted(dirnames):
            child = directory / name
            if is_excluded(child, config, top):
                continue
            if gitignore is not None and gitignore.ignored(child.absolute(), True):
                continue
            kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            child = directory / name
            if not is_included(child, config):
                continue
            if is_excluded(child, config, top):
                continue
            if gitignore is not None and gitignore.ignored(child.absolute(), False):
                continue
            problem = _dangling(child) if child.is_symlink() and not child.exists() else None
            yield Discovered(child, _display(child, cwd), problem)
    for error in errors:
        if error.filename and Path(error.filename) != top:
            yield Discovered(Path(error.filename), _display(Path(error.filename), cwd), f"cannot list folder: {error.strerror}")
