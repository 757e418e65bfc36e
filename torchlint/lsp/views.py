"""A published document as the protocol sees it: its text, the findings shown in it, where
each one is in that text, and how a fix or a noqa comment becomes edits of the documents the
client has.

- `PythonView`: a .py file; findings and fixes are in its own coordinates.
- `CellView`: one cell of a synchronized notebook. The check ran on the notebook's joined
  code: a finding is placed by its cell line, and a fix is applied to the joined code and
  written back into the cells the way `check --fix` writes a notebook (magics restored, a
  fix that would rewrite a magic refused), as edits of each changed cell's document.
- `NotebookFileView`: a .ipynb opened as plain text (a client without notebook support).
  Each finding is placed on its line inside the cell's JSON `source` string, which is where
  the code is in that text; fixes become edits of the JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from torchlint.lsp.positions import LineIndex

if TYPE_CHECKING:
    from torchlint.findings import Finding, Fix
    from torchlint.lsp.documents import SyncedCell
    from torchlint.notebook import Notebook

Changes = dict[str, list[types.TextEdit]]  # by document URI


def _range(lines: LineIndex, line: int, column: int, end_line: int, end_column: int) -> types.Range:
    start = lines.to_lsp(line, column)
    end = lines.to_lsp(end_line, end_column)
    if end < start:
        end = start
    return types.Range(types.Position(*start), types.Position(*end))


def replacement(old: str, new: str, lines: LineIndex) -> list[types.TextEdit]:
    """One edit turning `old` (the text `lines` indexes) into `new`: the span between their
    common start and common end, so the client keeps the cursor and undo steps small."""
    if old == new:
        return []
    limit = min(len(old), len(new))
    start = _common(lambda k: old[:k] == new[:k], limit)
    end = _common(lambda k: old[len(old) - k :] == new[len(new) - k :], limit - start)
    # Never split a "\r\n" (a position cannot fall between its two characters).
    if 0 < start < len(old) and old[start - 1] == "\r" and old[start] == "\n":
        start -= 1
    if 0 < end < len(old) and old[len(old) - end - 1] == "\r" and old[len(old) - end] == "\n":
        end -= 1
    first, last = lines.offset_position(start), lines.offset_position(len(old) - end)
    return [types.TextEdit(range=types.Range(types.Position(*first), types.Position(*last)), new_text=new[start : len(new) - end])]


def _common(same, limit: int) -> int:
    """The largest k <= limit with same(k), same being monotone: by halving, each test a
    slice comparison in C (a notebook's JSON may be megabytes of outputs)."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if same(middle):
            low = middle
        else:
            high = middle - 1
    return low


@dataclass
class View:
    uri: str  # as the client names the document
    version: int | None
    text: str
    path: Path  # the file checked (a notebook cell's notebook): its project, its docs links
    findings: list[Finding] = field(default_factory=list)
    encoding: str = "utf-16"

    def __post_init__(self) -> None:
        self.lines = LineIndex(self.text, self.encoding)
        #: The diagnostics last sent for it (the server sends none when they did not change).
        self.published: list[types.Diagnostic] | None = None

    def range(self, finding: Finding) -> types.Range:
        loc = finding.location
        return _range(self.lines, loc.line, loc.column, loc.end_line, loc.end_column)

    def fix_changes(self, fix: Fix) -> Changes | None:
        """The fix as edits (None: it no longer applies to this text)."""
        raise NotImplementedError

    def noqa_changes(self, finding: Finding) -> Changes | None:
        """`# noqa: TLxxx` for the finding's line (None: no line of it can take a comment)."""
        raise NotImplementedError


class PythonView(View):
    def fix_changes(self, fix: Fix) -> Changes | None:
        from torchlint.fix.apply import apply_fixes

        # Only a fix that still lands on the text it was made for (the same check `--fix`
        # makes before writing).
        if apply_fixes(self.text, [fix]).stale:
            return None
        return {
            self.uri: [
                types.TextEdit(range=_range(self.lines, e.line, e.column, e.end_line, e.end_column), new_text=e.content)
                for e in fix.edits
            ]
        }

    def noqa_changes(self, finding: Finding) -> Changes | None:
        from torchlint.add_noqa import silencing_line

        found = silencing_line(self.text, finding)
        if found is None:
            return None
        number, edited = found
        rng = _range(self.lines, number, 1, number, len(self.lines.line(number)) + 1)
        return {self.uri: [types.TextEdit(range=rng, new_text=edited)]}


@dataclass
class _NotebookView(View):
    """A view of a notebook's check: fixes and noqa comments are made in the joined code
    (where the engine's edits are), then split back into cells."""

    notebook: Notebook | None = None

    def fix_changes(self, fix: Fix) -> Changes | None:
        from torchlint.fix.apply import apply_fixes

        if self.notebook is None:
            return None
        applied = apply_fixes(self.notebook.source, [fix])
        if applied.stale or not applied.fixes:
            return None
        return self._cells_changed(applied.text)

    def noqa_changes(self, finding: Finding) -> Changes | None:
        from torchlint.add_noqa import silencing_line
        from torchlint.notebook.magics import split_lines

        if self.notebook is None or finding.cell is None:
            return None
        found = silencing_line(self.notebook.source, finding, self.notebook)
        if found is None:
            return None
        number, edited = found
        joined = split_lines(self.notebook.source)
        old = joined[number - 1]
        joined[number - 1] = edited + old[len(old.rstrip("\r\n")) :]
        return self._cells_changed("".join(joined))

    def _cells_changed(self, joined: str) -> Changes | None:
        from torchlint.notebook import NotebookError

        try:
            changed = self.notebook.cell_sources(joined)
        except NotebookError:  # a fix that rewrites a magic, or breaks the cell boundaries
            return None
        return self.changes(changed) if changed else None

    def changes(self, changed: dict[int, str]) -> Changes | None:
        """Edits that give the cells at these (0-based) notebook indexes these sources."""
        raise NotImplementedError


@dataclass
class CellView(_NotebookView):
    number: int = 0  # the cell's number in the checked notebook (1-based)
    cells: list[SyncedCell] = field(default_factory=list)  # the whole notebook, in order

    def changes(self, changed: dict[int, str]) -> Changes | None:
        out: Changes = {}
        for index, source in changed.items():
            cell = self.cells[index]
            lines = self.lines if cell.uri == self.uri else LineIndex(cell.text, self.encoding)
            out[cell.uri] = replacement(cell.text, source, lines)
        return out


@dataclass
class NotebookFileView(_NotebookView):
    def range(self, finding: Finding) -> types.Range:
        loc = finding.location
        if self.notebook is None or finding.cell is None:  # the JSON itself (unreadable)
            return super().range(finding)
        line, column = self.notebook.file_position(finding.cell, loc.line, loc.column)
        end_line, end_column = self.notebook.file_position(finding.cell, loc.end_line, loc.end_column)
        return _range(self.lines, line, column, end_line, end_column)

    def changes(self, changed: dict[int, str]) -> Changes | None:
        from torchlint.notebook import NotebookError

        try:
            data = self.notebook.with_sources(changed)
        except NotebookError:
            return None
        return {self.uri: replacement(self.text, data.decode("utf-8", "surrogatepass"), self.lines)}
