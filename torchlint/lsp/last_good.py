"""Diagnostics that survive a syntax error while the user types.

`y = torch.softmax(` does not parse until the line is finished; ruff keeps a file's other
diagnostics meanwhile instead of replacing them with the one syntax error. So does the
server: while a document does not parse, its last good findings are shown next to the
syntax error, each moved with the lines inserted or deleted above it and dropped when a line
it spans was edited. Its last good facts stand in for the project phase too, so findings of
other files that depend on this one do not flicker either.
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import TYPE_CHECKING

from torchlint.static.lines import python_lines

if TYPE_CHECKING:
    from torchlint.findings import Finding
    from torchlint.static.engine import FileResult


def carried_over(good_text: str, good: FileResult, text: str, broken: FileResult) -> FileResult:
    """`broken` (the result of `text`, which does not parse) with `good`'s findings and facts
    moved onto `text` where the lines they span are unchanged."""
    from torchlint.static.engine import FileResult

    moved = _line_map(good_text, text)
    kept: list[Finding] = []
    for finding in good.findings:
        location = finding.location
        start, end = moved.get(location.line), moved.get(location.end_line)
        if start is None or end is None or end - start != location.end_line - location.line:
            continue  # a line it spans was edited: it may no longer hold
        # No fix: its edits point at the text it was computed from, and the file is broken.
        kept.append(dataclasses.replace(finding, location=dataclasses.replace(location, line=start, end_line=end), fix=None))
    return FileResult(broken.path, [*broken.findings, *kept], good.facts, broken.parsed)


def _line_map(old: str, new: str) -> dict[int, int]:
    """Old line number -> new line number, for the lines the edit left as they were."""
    old_lines, new_lines = python_lines(old), python_lines(new)
    mapping: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            mapping[block.a + offset + 1] = block.b + offset + 1
    return mapping


def is_syntax_failure(result: FileResult) -> bool:
    return not result.parsed and any(f.code == "TL000" and f.message.startswith("syntax error") for f in result.findings)
