"""`torchlint clean`: remove the cache. The configured cache folder (`cache-dir`,
`--cache-dir`, `TORCHLINT_CACHE_DIR`, else `.torchlint_cache` in the project root) and every
`.torchlint_cache` folder under the current one (a monorepo's sub-projects each have theirs).

Only folders torchlint made are removed: their CACHEDIR.TAG says so, or they carry the
default name. A mistaken `cache-dir = "src"` must never delete a source tree.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from torchlint.config import CACHE_DIR_NAME, DEFAULT_EXCLUDE
from torchlint.static.cache import is_cache_folder


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


def removable(folder: Path) -> bool:
    return folder.name == CACHE_DIR_NAME or is_cache_folder(folder)


def remove(folder: Path) -> str | None:
    """Remove `folder`; None when done, else why not."""
    try:
        shutil.rmtree(folder)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None
