"""torchlint positions (1-based lines, 1-based columns in code points, end exclusive) to LSP
positions (0-based lines, 0-based columns in the negotiated encoding: UTF-16 code units
unless the client offered UTF-8 or UTF-32), and back.

Lines are split where CPython and libcst split them ("\\r\\n", "\\r", "\\n"; the LSP agrees),
not by str.splitlines, which also splits at form feeds and U+2028.
"""

from __future__ import annotations

import bisect

from torchlint.static.lines import LINE_BREAK as _LINE_BREAK

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def _units(text: str, encoding: str) -> int:
    if encoding == UTF32:
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


class LineIndex:
    """One document's lines, for converting its positions."""

    def __init__(self, text: str, encoding: str = UTF16) -> None:
        self.text = text
        self.lines = _LINE_BREAK.split(text)
        self.encoding = encoding
        self._starts: list[int] | None = None  # offset of each line, made on first use

    def line(self, number: int) -> str:
        """The text of 1-based line `number` ("" past the end)."""
        return self.lines[number - 1] if 1 <= number <= len(self.lines) else ""

    def to_lsp(self, line: int, column: int) -> tuple[int, int]:
        """1-based (line, code-point column) -> 0-based (line, character in the encoding)."""
        if line > len(self.lines):  # one past the end: the end of the last line
            last = len(self.lines)
            return last - 1, _units(self.lines[-1], self.encoding)
        line = max(line, 1)
        text = self.lines[line - 1]
        return line - 1, _units(text[: max(column - 1, 0)], self.encoding)

    def offset_position(self, offset: int) -> tuple[int, int]:
        """A string offset into the text -> 0-based (line, character in the encoding)."""
        if self._starts is None:
            starts, position = [], 0
            for match in _LINE_BREAK.finditer(self.text):
                starts.append(position)
                position = match.end()
            starts.append(position)
            self._starts = starts
        line = bisect.bisect_right(self._starts, offset) - 1
        start = self._starts[line]
        return line, _units(self.text[start:offset], self.encoding)

    def from_lsp(self, line: int, character: int) -> tuple[int, int]:
        """0-based (line, character in the encoding) -> 1-based (line, code-point column)."""
        if line >= len(self.lines):
            return len(self.lines) + 1, 1
        text = self.lines[max(line, 0)]
        if self.encoding == UTF32:
            return line + 1, min(character, len(text)) + 1
        units = 0
        for index, char in enumerate(text):
            if units >= character:
                return line + 1, index + 1
            units += _units(char, self.encoding)
        return line + 1, len(text) + 1
