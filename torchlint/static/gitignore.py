"""A small .gitignore matcher: enough of gitignore(5) for linters (`*`, `**`, `?`, `[..]`,
leading and trailing `/`, `!` negation), with each file's patterns anchored at its folder."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern[str]
    negated: bool
    directory_only: bool


def _translate(glob: str) -> str:
    out = []
    i = 0
    while i < len(glob):
        char = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = glob.find("]", i + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = glob[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        elif char == "\\" and i + 1 < len(glob):
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def parse_patterns(text: str) -> list[_Pattern]:
    patterns = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        directory_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _translate(line)
        prefix = "" if anchored else "(?:.*/)?"
        patterns.append(_Pattern(re.compile(f"^{prefix}{body}$"), negated, directory_only))
    return patterns


class GitIgnore:
    """Patterns from every .gitignore between the root and the folder being walked."""

    def __init__(self) -> None:
        self._by_dir: dict[Path, list[_Pattern]] = {}

    def load_dir(self, directory: Path) -> None:
        if directory in self._by_dir:
            return
        try:
            text = _read_regular(directory / ".gitignore")
        except OSError:
            text = None
        self._by_dir[directory] = parse_patterns(text) if text is not None else []

    def ignored(self, path: Path, is_dir: bool) -> bool:
        result = False
        for base, patterns in self._by_dir.items():
            if not patterns:
                continue
            try:
                relative = path.relative_to(base).as_posix()
            except ValueError:
                continue
            for pattern in patterns:
                if pattern.directory_only and not is_dir:
                    continue
                if pattern.regex.match(relative):
                    result = not pattern.negated
        return result


#: A .gitignore larger than this is not read (nobody writes one; a planted one costs memory).
MAX_GITIGNORE_BYTES = 1 << 20


def _read_regular(path: Path) -> str | None:
    """The text of `path` if it is a regular file of a sane size, else None. Opened without
    blocking and checked with fstat: a FIFO named .gitignore (a tree can hold one, and the
    cache folder's own is in the checked tree) would otherwise stop the walk forever."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    descriptor = os.open(path, flags)
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode) or status.st_size > MAX_GITIGNORE_BYTES:
            return None
        with os.fdopen(os.dup(descriptor), "rb") as handle:
            return handle.read(MAX_GITIGNORE_BYTES).decode("utf-8", errors="replace")
    finally:
        os.close(descriptor)
