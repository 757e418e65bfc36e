"""Suppression comments.

- ``# noqa`` silences everything on its line; ``# noqa: TL301, TL101`` only those codes.
- ``# torchlint: disable=TL301`` or ``=load-without-map-location`` on the line.
- ``# torchlint: disable-file=TL301,TL2`` (or ``disable-file`` alone) anywhere on its own line;
  ruff's spelling, ``# torchlint: noqa`` or ``# torchlint: noqa: TL301``, means the same.

A finding is silenced by a comment on its first or its last line, so a call spanning lines
can carry the comment after its closing parenthesis.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from torchlint.static.lines import python_lines

_NOQA = re.compile(r"#\s*(?:torchlint:\s*)?noqa(?::\s*(?P<codes>[A-Za-z0-9_\-]+(?:[\s,]+[A-Za-z0-9_\-]+)*))?", re.IGNORECASE)
_DISABLE = re.compile(r"#\s*torchlint:\s*disable\s*=\s*(?P<codes>[A-Za-z0-9_\-]+(?:\s*,\s*[A-Za-z0-9_\-]+)*)")
_DISABLE_FILE = re.compile(
    r"^\s*#\s*torchlint:\s*(?:disable-file(?:\s*=\s*|\s*$)|noqa(?:\s*:\s*|\s*$))"
    r"(?P<codes>[A-Za-z0-9_\-]+(?:[\s,]+[A-Za-z0-9_\-]+)*)?\s*$",
    re.IGNORECASE,
)

ALL = "*"


@dataclass
class Suppressions:
    by_line: dict[int, set[str]] = field(default_factory=dict)
    whole_file: set[str] = field(default_factory=set)
    #: every selector as written: (line, column of its comment, selector); the line is
    #: negative for a `disable-file` comment
    directives: list[tuple[int, int, str]] = field(default_factory=list)
    #: the (line, selector) pairs that silenced a finding (line 0: a disable-file selector)
    used: set[tuple[int, str]] = field(default_factory=set)

    def silences(self, code: str, name: str, lines: tuple[int, ...]) -> bool:
        selector = _matching(self.whole_file, code, name)
        if selector is not None:
            self.used.add((0, selector))
            return True
        for line in lines:
            selector = _matching(self.by_line.get(line, ()), code, name)
            if selector is not None:
                self.used.add((line, selector))
                return True
        return False

    def unused(self) -> list[tuple[int, int, str]]:
        """Directives whose selector silenced nothing, in the order written."""
        found = []
        for line, column, selector in self.directives:
            key = (0, selector) if line < 0 else (line, selector)  # negative: a disable-file line
            if key not in self.used:
                found.append((abs(line), column, selector))
        return found


_PREFIX = re.compile(r"[A-Z]+[0-9]*")


def _matching(selectors, code: str, name: str) -> str | None:
    for selector in sorted(selectors):  # sorted: the same selector is credited every run
        if selector in (ALL, code, name):
            return selector
        if _PREFIX.fullmatch(selector) and code.startswith(selector):
            return selector  # a prefix such as TL3 names a family
    return None


def _split(codes: str | None) -> set[str]:
    if not codes:
        return {ALL}
    return {part for part in re.split(r"[\s,]+", codes.strip()) if part}


def parse_suppressions(text: str) -> Suppressions:
    result = Suppressions()
    if "torchlint:" not in text and "noqa" not in text.lower():
        return result
    for number, line in enumerate(python_lines(text), start=1):
        if "#" not in line:
            continue
        file_match = _DISABLE_FILE.match(line)
        if file_match:
            selectors = _split(file_match.group("codes"))
            result.whole_file |= selectors
            column = line.index("#") + 1
            result.directives.extend((-number, column, selector) for selector in sorted(selectors))
            continue
        for match in (*_NOQA.finditer(line), *_DISABLE.finditer(line)):
            selectors = _split(match.group("codes"))
            result.by_line.setdefault(number, set()).update(selectors)
            result.directives.extend((number, match.start() + 1, selector) for selector in sorted(selectors))
    return result
