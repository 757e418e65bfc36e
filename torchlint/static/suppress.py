"""Suppression comments.

- ``# noqa`` silences everything on its line; ``# noqa: TL301, TL101`` only those codes.
- ``# torchlint: disable=TL301`` or ``=load-without-map-location`` on the line.
- ``# torchlint: disable-file=TL301,TL2`` (or ``disable-file`` alone) anywhere on its own line.

A finding is silenced by a comment on its first or its last line, so a call spanning lines
can carry the comment after its closing parenthesis.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z0-9_\-]+(?:[\s,]+[A-Za-z0-9_\-]+)*))?", re.IGNORECASE)
_DISABLE = re.compile(r"#\s*torchlint:\s*disable\s*=\s*(?P<codes>[A-Za-z0-9_\-]+(?:\s*,\s*[A-Za-z0-9_\-]+)*)")
_DISABLE_FILE = re.compile(r"^\s*#\s*torchlint:\s*disable-file(?:\s*=\s*(?P<codes>[A-Za-z0-9_\-]+(?:\s*,\s*[A-Za-z0-9_\-]+)*))?\s*$")

ALL = "*"


@dataclass
class Suppressions:
    by_line: dict[int, set[str]] = field(default_factory=dict)
    whole_file: set[str] = field(default_factory=set)

    def silences(self, code: str, name: str, lines: tuple[int, ...]) -> bool:
        if _matches(self.whole_file, code, name):
            return True
        return any(_matches(self.by_line.get(line, ()), code, name) for line in lines)


_PREFIX = re.compile(r"[A-Z]+[0-9]*")


def _matches(selectors, code: str, name: str) -> bool:
    for selector in selectors:
        if selector in (ALL, code, name):
            return True
        if _PREFIX.fullmatch(selector) and code.startswith(selector):
            return True  # a prefix such as TL3 names a family
    return False


def _split(codes: str | None) -> set[str]:
    if not codes:
        return {ALL}
    return {part for part in re.split(r"[\s,]+", codes.strip()) if part}


def parse_suppressions(text: str) -> Suppressions:
    result = Suppressions()
    if "torchlint:" not in text and "noqa" not in text.lower():
        return result
    for number, line in enumerate(text.splitlines(), start=1):
        if "#" not in line:
            continue
        file_match = _DISABLE_FILE.match(line)
        if file_match:
            result.whole_file |= _split(file_match.group("codes"))
            continue
        for match in _NOQA.finditer(line):
            result.by_line.setdefault(number, set()).update(_split(match.group("codes")))
        for match in _DISABLE.finditer(line):
            result.by_line.setdefault(number, set()).update(_split(match.group("codes")))
    return result
