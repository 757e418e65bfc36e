"""The "Disable TLxxx for this line" edit: add the code to the line's `# noqa`, or add one."""

from __future__ import annotations

import re

# Read exactly as torchlint.static.suppress reads it (the first `# noqa` on the line counts):
# `# noqa` alone silences every code, `# noqa: A, B` only those.
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z0-9_\-]+(?:[\s,]+[A-Za-z0-9_\-]+)*))?", re.IGNORECASE)


def noqa_edit(line: str, code: str) -> tuple[int, int, str] | None:
    """The edit that silences `code` on `line` (its text without the line break): (start
    column, end column, replacement), 0-based code points, end exclusive. None when the line
    already silences it (a bare `# noqa`, or one naming the code)."""
    match = _NOQA.search(line)
    if match is not None:
        codes = match.group("codes")
        if codes is None:
            return None  # a bare noqa already silences everything on the line
        if code in re.split(r"[\s,]+", codes.strip()):
            return None
        end = match.end("codes")
        return end, end, f", {code}"
    kept = len(line.rstrip())
    return kept, len(line), f"  # noqa: {code}"


def can_take_comment(line: str) -> bool:
    """A comment after a backslash continuation would break the code."""
    return not line.rstrip().endswith("\\")
