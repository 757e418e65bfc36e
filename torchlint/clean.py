"""`torchlint clean`: remove the cache. The configured cache folder (`cache-dir`,
`--cache-dir`, `TORCHLINT_CACHE_DIR`, else `.torchlint_cache` in the project root) and every
`.torchlint_cache` folder under the current one (a monorepo's sub-projects each have theirs).

Only torchlint's own entries are removed (static/cache_folder.py says which), and a folder
only when they were all it held: a mistaken `cache-dir = "src"` or `--cache-dir .` must
never delete a source tree, or its `.git`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from torchlint.config import CACHE_DIR_NAME, DEFAULT_EXCLUDE
from torchlint.static import cache_folder


def cache_folders(configured: Path, cwd: Path) -> list[Path]:
    """The cache folders to remove: the configured one, then those found under `cwd`."""
    found: list[Path] = []
    if configured.is_dir() and not configured.is_symlink():
        found.append(configured.absolute())
    # Other tools' folders (.git, .venv, node_modules) are not walked: they hold no cache of ours.
    skipped = set(DEFAULT_EXCLUDE) - {CACHE_DIR_NAME}
    for dirpath, dirnames, _ in os.walk(cwd, followlinks=False):
        if CACHE_DIR_NAME in dirnames:
            candidate = (Path(dirpath) / CACHE_DIR_NAME).absolute()
            if candidate not in found and not candidate.is_symlink():
                found.append(candidate)
        dirnames[:] = [name for name in dirnames if name not in skipped and name != CACHE_DIR_NAME]
    return found


@dataclass
class Released:
    """What `release` did to one folder."""

    not_a_cache: bool = False
    removed: bool = False  # something of torchlint's was removed (the folder itself, or entries)
    kept: list[str] = field(default_factory=list)  # what is not torchlint's, left in place
    problem: str | None = None


def release(folder: Path) -> Released:
    if not cache_folder.recognised(folder):
        return Released(not_a_cache=True)
    try:
        removed, kept = cache_folder.release(folder)
    except OSError as exc:
        return Released(problem=exc.strerror or str(exc))
    return Released(removed=removed, kept=kept)
