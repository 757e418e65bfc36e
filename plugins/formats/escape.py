"""One escaping rule for every human- or CI-read format: control characters never reach the
output raw.

A file name may hold a newline (`a\\n::error file=x::owned` forges a GitHub annotation), an
escape sequence (recolours or rewrites a terminal) or a Unicode line separator (a new line
in many log viewers). They are shown the way Python's repr shows them: `\\n`, `\\x1b`,
`\\u2028`. JSON formats need nothing more: `json` already escapes them.
"""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls, and the Unicode line and paragraph separators.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_control(text: str) -> str:
    """`text` with every control character spelled out; unchanged (and cheap) when it has none."""
    return _CONTROL.sub(_escape, text)
