"""Lines as Python numbers them: a line ends at "\\r\\n", a lone "\\r" or "\\n", and nowhere else.

`str.splitlines()` also breaks at "\\f", "\\v", "\\x1c"-"\\x1e", "\\x85", U+2028 and U+2029. A
form feed on its own line (an Emacs page break) is legal Python and is no line end to CPython,
libcst or the LSP, so every line number counted with `splitlines` after it is one too high.
Everything that turns a line number into text (suppressions, snippets, baselines, diffs, the
noqa writer, notebooks' linecache) splits with this module.
"""

from __future__ import annotations

import re

LINE_BREAK = re.compile(r"\r\n|\r|\n")
_WITH_END = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def python_lines(text: str, keepends: bool = False) -> list[str]:
    """`text.splitlines(keepends)`, but split only where Python ends a line."""
    if keepends:
        return _WITH_END.findall(text)
    lines = LINE_BREAK.split(text)
    if lines[-1] == "":  # like splitlines: a final line break opens no empty last line
        lines.pop()
    return lines
