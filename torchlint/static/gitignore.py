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


_NEVER = None  # a pattern git cannot match (an unterminated `[`): it ignores nothing


def _translate(glob: str) -> str | None:
    """The regex for one pattern's glob, as git's wildmatch reads it, or None for a pattern
    that matches nothing. Runs of `**/` collapse into one and other runs of `*` into one
    `[^/]*`: a run of optional `.*` groups backtracks exponentially on a path that fails."""
    out: list[str] = []
    i = 0
    n = len(glob)
    while i < n:
        char = glob[i]
        if char == "*":
            j = i
            while j < n and glob[j] == "*":
                j += 1
            double = j - i >= 2 and (i == 0 or glob[i - 1] == "/") and (j == n or glob[j] == "/")
            if not double:
                if not out or out[-1] != "[^/]*":
                    out.append("[^/]*")
                i = j
                continue
            if j == n:  # `dir/**`: everything inside (the slash before it is already out)
                out.append(".*")
                i = j
                continue
            # `**/` (leading or after a slash): zero or more folders; `**/**/` is the same
            i = j + 1
            while glob.startswith("**/", i):
                i += 3
            if not out or out[-1] != "(?:.*/)?":
                out.append("(?:.*/)?")
            continue
        if char == "?":
            out.append("[^/]")
        elif char == "[":
            parsed = _bracket(glob, i)
            if parsed is None:
                return _NEVER
            body, i = parsed
            out.append(body)
            continue
        elif char == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _bracket(glob: str, start: int) -> tuple[str, int] | None:
    """The regex class for the `[...]` at `start` and the index after it, or None when it is
    never closed. `!` or `^` first negates; a `]` right after them is a member; `\\` escapes."""
    i = start + 1
    negated = i < len(glob) and glob[i] in "!^"
    if negated:
        i += 1
    members: list[str] = []
    first = True
    while i < len(glob):
        char = glob[i]
        if char == "]" and not first:
            body = "".join(members)
            return (f"[^/{body}]" if negated else f"[{body}]"), i + 1
        if char == "\\" and i + 1 < len(glob):
            i += 1
            char = glob[i]
        if char == "-" and members and i + 1 < len(glob) and glob[i + 1] != "]":
            members.append("-")
        elif char != "/":  # a class never matches the folder separator
            members.append(re.escape(char))
        first = False
        i += 1
    return None


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
        if body is _NEVER:
            continue
        prefix = "" if anchored or body.startswith("(?:.*/)?") else "(?:.*/)?"
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
