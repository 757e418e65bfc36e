"""Dotted module names for files on disk, for resolving imports between checked files."""

from __future__ import annotations

from pathlib import Path


def module_name(path: Path) -> str:
    """`src/pkg/models.py` -> `pkg.models` when `src/pkg/__init__.py` exists, else `models`."""
    path = path.absolute()
    parts = [path.stem] if path.stem != "__init__" else []
    directory = path.parent
    while (directory / "__init__.py").exists() and directory != directory.parent:
        parts.append(directory.name)
        directory = directory.parent
    return ".".join(reversed(parts)) or path.parent.name
