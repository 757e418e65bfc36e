"""Terminal colour for the human formats: on when the output is a terminal (`--color auto`),
off under `NO_COLOR` (https://no-color.org) or `TERM=dumb`, forced with `--color always` and
refused with `--color never`. A style is a set of ANSI wrappers that are empty when off, so a
writer styles its text the same way whether colour is on or not."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TextIO

CHOICES = ("auto", "always", "never")


def wants_color(choice: str, stream: TextIO) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


@dataclass(frozen=True)
class Style:
    on: bool = False

    def _wrap(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.on and text else text

    def path(self, text: str) -> str:
        return self._wrap(text, "1")

    def code(self, text: str) -> str:
        return self._wrap(text, "1;31")

    def fixable(self, text: str) -> str:
        return self._wrap(text, "36")

    def carets(self, text: str) -> str:
        return self._wrap(text, "1;31")

    def gutter(self, text: str) -> str:
        return self._wrap(text, "34")

    def help(self, text: str) -> str:
        return self._wrap(text, "1;36")


PLAIN = Style(False)
