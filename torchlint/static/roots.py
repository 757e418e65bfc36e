"""Which project a file belongs to: the nearest folder up from it holding a project marker.

The project phase reads facts and tokens per project (a folder of independent examples, each
with its own requirements.txt, is many projects), and a check of some files reads the rest of
their project (torchlint.static.project_rest) so that a file's findings do not depend on what
else was named."""

from __future__ import annotations

from pathlib import Path

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", ".git")


class RootFinder:
    """A file's project folder (as a string; "" outside any project), cached per folder: a
    walk asks for thousands of files in a few hundred folders.

    ``fallback``: the project of a file under no marker that lies inside this folder (the
    folder the command runs in, as ruff takes it), so that `torchlint check train.py` and
    `torchlint check .` in a folder without a pyproject.toml read the same files."""

    def __init__(self, fallback: Path | None = None) -> None:
        self._folders: dict[Path, str] = {}
        self._fallback = fallback.absolute() if fallback is not None else None

    def of(self, path: Path, default: str = "") -> str:
        try:
            found = self._root_of(path.absolute().parent)
        except (OSError, RecursionError):
            return default
        if not found and self._fallback is not None and self._fallback in path.absolute().parents:
            return str(self._fallback)
        return found

    def _root_of(self, folder: Path) -> str:
        found = self._folders.get(folder)
        if found is None:
            if any((folder / marker).exists() for marker in PROJECT_MARKERS):
                found = str(folder)
            elif folder.parent == folder:
                found = ""
            else:
                found = self._root_of(folder.parent)
            self._folders[folder] = found
        return found


class ProjectRoots:
    """Each checked file's project folder, by display path, looked up on demand."""

    def __init__(self, paths: dict[str, Path], finder: RootFinder | None = None) -> None:
        self._paths = paths
        self._finder = finder or RootFinder()

    def get(self, display: str, default: str = "") -> str:
        path = self._paths.get(display)
        if path is None:
            return default
        return self._finder.of(path, default)
