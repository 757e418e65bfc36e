"""Findings in a notebook's joined source, moved to (cell, line in the cell).

Everything inside the engine (suppressions, fixes, the cache, the project phase, runtime
evidence) works in joined-source lines; this runs once, on the final findings, so every
output format gets the cell and the line a user sees in Jupyter.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Mapping

from torchlint.findings import Finding, Location
from torchlint.notebook.document import Notebook

# "line 17" in a message about the same file (rules say "(line 17)", "at line 17").
_SAME_FILE_LINE = re.compile(r"\bline (\d+)\b")


def to_cells(findings: list[Finding], notebooks: Mapping[str, Notebook], *, key=lambda path: path,
             mentions: Mapping[str, Notebook] | None = None) -> list[Finding]:
    """`findings` with those in `notebooks` (by `key(path)`) in cell coordinates, sorted.
    `path:line` in messages is rewritten for each name in `mentions` (default: the paths of
    `notebooks`; a run's messages name files by their base name)."""
    if not notebooks:
        return findings
    mentions = notebooks if mentions is None else mentions
    out = []
    for finding in findings:
        notebook = notebooks.get(key(finding.path))
        if notebook is None or finding.cell is not None or not notebook.cells:
            out.append(_mention_cells(finding, mentions, None))
            continue
        loc = finding.location
        cell, line = notebook.cell_position(loc.line)
        end_cell, end_line = notebook.cell_position(loc.end_line)
        end_column = loc.end_column
        if end_cell != cell:  # a span across a cell boundary ends with its first cell
            end_line, end_column = line, loc.column + 1
        column = loc.column + notebook.column_shift(cell, line)
        end_column += notebook.column_shift(cell, end_line) if end_cell == cell else column - loc.column
        moved = replace(finding, location=Location(line, column, end_line, end_column), cell=cell)
        out.append(_mention_cells(moved, mentions, notebook))
    return sorted(out, key=Finding.sort_key)


def broken_cell_findings(path: str, notebook: Notebook) -> list[Finding]:
    """One TL000 per code cell that is not Python; the notebook's other cells are checked."""
    from torchlint.static.engine_rules import FileNotChecked, engine_finding

    return [
        replace(engine_finding(FileNotChecked, path, f"{cell.message} (this cell is not checked; the others are)",
                               cell.line, cell.column), cell=cell.number)
        for cell in notebook.broken
    ]


def mention_cells(text: str, mentions: Mapping[str, Notebook]) -> str:
    """`nb.ipynb:47` (a joined-source line) in `text` as `nb.ipynb:cell 3:2`, for each name."""
    for path, notebook in mentions.items():
        if path in text:
            text = re.sub(r"(?<![\w./-])" + re.escape(path) + r":(\d+)\b",
                          lambda m, path=path, notebook=notebook: f"{path}:cell {_short(notebook, int(m.group(1)))}", text)
    return text


def _mention_cells(finding: Finding, mentions: Mapping[str, Notebook], own: Notebook | None) -> Finding:
    """Line numbers in the message and evidence that point into a notebook, as cells."""
    def rewrite(text: str) -> str:
        if own is not None:
            text = _SAME_FILE_LINE.sub(lambda m: _cell_line(own, int(m.group(1))), text)
        return mention_cells(text, mentions)

    message = rewrite(finding.message)
    evidence = tuple(replace(e, detail=rewrite(e.detail)) for e in finding.evidence)
    if message == finding.message and evidence == finding.evidence:
        return finding
    return replace(finding, message=message, evidence=evidence)


def _cell_line(notebook: Notebook, line: int) -> str:
    cell, in_cell = notebook.cell_position(line)
    return f"line {in_cell} of cell {cell}"


def _short(notebook: Notebook, line: int) -> str:
    cell, in_cell = notebook.cell_position(line)
    return f"{cell}:{in_cell}"


def location_text(finding: Finding) -> str:
    """`line:column` in a .py file, `cell N:line:column` in a notebook (what text formats print)."""
    loc = finding.location
    if finding.cell is None:
        return f"{loc.line}:{loc.column}"
    return f"cell {finding.cell}:{loc.line}:{loc.column}"

