"""Apply text edits to a file's content."""

from __future__ import annotations

from torchlint.findings import Edit, Fix


def _offsets(text: str) -> list[int]:
    """Offset of the start of each line (1-based line n starts at offsets[n - 1])."""
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)
    return starts


def apply_fixes(text: str, fixes: list[Fix]) -> tuple[str, list[Fix]]:
    """Apply as many fixes as do not overlap an earlier one; return the new text and the
    fixes applied. Overlapping ones wait for the next pass (the caller re-checks)."""
    starts = _offsets(text)

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column - 1

    taken: list[tuple[int, int]] = []
    applied: list[Fix] = []
    spans: list[tuple[int, int, str]] = []
    for fix in fixes:
        edits = [(offset(e.line, e.column), offset(e.end_line, e.end_column), e.content) for e in fix.edits]
        if any(not (end <= a or start >= b) for start, end, _ in edits for a, b in taken):
            continue
        taken.extend((start, end) for start, end, _ in edits)
        spans.extend(edits)
        applied.append(fix)
    for start, end, content in sorted(spans, reverse=True):
        text = text[:start] + content + text[end:]
    return text, applied


def edit_from_span(content: str, span: tuple[int, int, int, int]) -> Edit:
    line, column, end_line, end_column = span
    return Edit(content, line, column, end_line, end_column)
