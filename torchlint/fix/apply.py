"""Apply text edits to a file's content, in the coordinates libcst uses, and only where each
edit still finds the text it was made for."""

from __future__ import annotations

from dataclasses import dataclass, field

from torchlint.findings import Edit, Fix
from torchlint.static.lines import LINE_BREAK

# libcst ends a line at "\r\n", a lone "\r" or "\n" (not where str.splitlines also does).
# Counting only "\n" put edits in a file with mixed line endings at the wrong place.
_LINE_END = LINE_BREAK


def line_starts(text: str) -> list[int]:
    """Offset of the start of each line (1-based line n starts at starts[n - 1])."""
    return [0, *(match.end() for match in _LINE_END.finditer(text))]


def slice_span(text: str, starts: list[int], span: tuple[int, int, int, int]) -> str | None:
    """The text between two 1-based positions, or None when the span is not inside `text`."""
    offsets = _offsets(text, starts, span)
    return None if offsets is None else text[offsets[0] : offsets[1]]


def _offset(text: str, starts: list[int], line: int, column: int) -> int | None:
    if not (1 <= line <= len(starts)) or column < 1:
        return None
    start = starts[line - 1]
    line_end = starts[line] if line < len(starts) else len(text)
    offset = start + column - 1
    # A column may point just past the line's last character (an exclusive end), never past
    # the line break into the next line.
    return offset if offset <= line_end else None


def _offsets(text: str, starts: list[int], span: tuple[int, int, int, int]) -> tuple[int, int] | None:
    line, column, end_line, end_column = span
    start, end = _offset(text, starts, line, column), _offset(text, starts, end_line, end_column)
    if start is None or end is None or end < start:
        return None
    return start, end


@dataclass
class Applied:
    text: str
    fixes: list[Fix] = field(default_factory=list)
    #: Fixes refused because an edit no longer lands on the text it was made for.
    stale: list[Fix] = field(default_factory=list)


def apply_fixes(text: str, fixes: list[Fix]) -> Applied:
    """Apply as many fixes as do not overlap an earlier one. Overlapping ones wait for the
    next pass (the caller re-checks). A fix whose edit falls outside the text, or whose
    `original` is not the text at its span, is refused whole: writing it would put code in
    the wrong place."""
    starts = line_starts(text)
    taken: list[tuple[int, int]] = []
    result = Applied(text)
    spans: list[tuple[int, int, str]] = []
    for fix in fixes:
        edits = [_locate(text, starts, edit) for edit in fix.edits]
        if any(edit is None for edit in edits):
            result.stale.append(fix)
            continue
        if any(not (end <= a or start >= b) for start, end, _ in edits for a, b in taken):
            continue
        taken.extend((start, end) for start, end, _ in edits)
        spans.extend(edits)
        result.fixes.append(fix)
    for start, end, content in sorted(spans, reverse=True):
        text = text[:start] + content + text[end:]
    result.text = text
    return result


def _locate(text: str, starts: list[int], edit: Edit) -> tuple[int, int, str] | None:
    offsets = _offsets(text, starts, (edit.line, edit.column, edit.end_line, edit.end_column))
    if offsets is None:
        return None
    start, end = offsets
    if edit.original is not None and text[start:end] != edit.original:
        return None
    return start, end, edit.content


def edit_from_span(content: str, span: tuple[int, int, int, int], original: str | None = None) -> Edit:
    line, column, end_line, end_column = span
    return Edit(content, line, column, end_line, end_column, original)
