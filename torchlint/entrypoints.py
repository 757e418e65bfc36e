"""Find one group's entry points without importing importlib.metadata.

Plugins are found the standard way, through the entry points in installed distributions'
metadata. But `importlib.metadata` costs ~30 ms to import (email, zipfile, csv, ...) and
pluggy's `load_setuptools_entrypoints` another ~15 ms to read every distribution, in a
command whose whole run is ~130 ms when no file needs parsing. One group's entry points only
need each `sys.path` folder's `*.dist-info/entry_points.txt` (and `*.egg-info/`): reading
those directly takes under a millisecond.

The scan follows importlib.metadata's order (sys.path order, then directory listing
order), so the first plugin registered under a name is the same one pluggy would pick.
Where importlib.metadata could see more than folders (an archive on sys.path, an import
hook that provides distributions) we ask importlib.metadata itself.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from importlib import import_module
from typing import Any

#: `module`, `module:attr.sub`, optionally followed by `[extras]` (ignored, as importlib does).
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


@dataclass(frozen=True)
class EntryPoint:
    name: str
    value: str
    #: The distribution that declares it: project name and version, from its metadata.
    project: str
    version: str

    def load(self) -> Any:
        match = _VALUE.match(self.value)
        if match is None:
            raise ValueError(f"entry point {self.name!r} = {self.value!r} of {self.project} is malformed")
        target: Any = import_module(match.group("module"))
        for attribute in (match.group("attr") or "").split("."):
            if attribute:
                target = getattr(target, attribute)
        return target


def entry_points(group: str) -> list[EntryPoint]:
    """Every entry point of `group` in every installed distribution, in discovery order."""
    if _needs_importlib_metadata():
        return _from_importlib_metadata(group)
    found = []
    for folder in sys.path:
        for info in _metadata_folders(folder or "."):
            found.extend(_read_group(info, group))
    return found


def _needs_importlib_metadata() -> bool:
    from importlib.machinery import PathFinder

    if any(getattr(finder, "find_distributions", None) is not None and finder is not PathFinder for finder in sys.meta_path):
        return True
    return any(entry and os.path.isfile(entry) for entry in sys.path)  # a zip or an egg archive


def _metadata_folders(folder: str) -> list[str]:
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [os.path.join(folder, name) for name in names if name.lower().endswith((".dist-info", ".egg-info"))]


def _read_group(info: str, group: str) -> list[EntryPoint]:
    try:
        with open(os.path.join(info, "entry_points.txt"), encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return []
    if f"[{group}]" not in text:
        return []  # the common case: read nothing else of this distribution
    pairs = _section(text, group)
    if not pairs:
        return []
    project, version = _project_and_version(info)
    return [EntryPoint(name, value, project, version) for name, value in pairs]


def _section(text: str, group: str) -> list[tuple[str, str]]:
    """`name = value` lines of one `[group]` section (the INI dialect importlib.metadata reads)."""
    pairs = []
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1].strip()
            continue
        if current == group and "=" in line:
            name, _, value = line.partition("=")
            pairs.append((name.strip(), value.strip()))
    return pairs


def _project_and_version(info: str) -> tuple[str, str]:
    headers: dict[str, str] = {}
    for file_name in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(info, file_name), encoding="utf-8") as handle:
                for line in handle:
                    if not line.strip():
                        break  # the body (long description) starts after the first blank line
                    key, _, value = line.partition(":")
                    headers.setdefault(key.strip().lower(), value.strip())
        except (OSError, UnicodeDecodeError):
            continue
        break
    stem = os.path.basename(info).rpartition(".")[0]
    name, _, version = stem.partition("-")
    return headers.get("name", name), headers.get("version", version.partition("-")[0])


def _from_importlib_metadata(group: str) -> list[EntryPoint]:
    import importlib.metadata

    found = []
    for dist in importlib.metadata.distributions():
        for ep in dist.entry_points:
            if ep.group == group:
                found.append(EntryPoint(ep.name, ep.value, dist.metadata["name"] or "", dist.version or ""))
    return found


def installed_version(project: str) -> str | None:
    """The version of the first installed distribution named `project` on `sys.path` (as
    importlib.metadata would find it), read from its metadata without importing it: torch's
    version without paying for `import torch`. None when it is not installed."""
    wanted = _normalized(project)
    if _needs_importlib_metadata():
        import importlib.metadata

        try:
            return importlib.metadata.version(project)
        except importlib.metadata.PackageNotFoundError:
            return None
    for folder in sys.path:
        for info in _metadata_folders(folder or "."):
            stem = os.path.basename(info).rpartition(".")[0]
            if _normalized(stem.partition("-")[0]) == wanted:
                name, version = _project_and_version(info)
                if _normalized(name) == wanted and version:
                    return version
    return None


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
