"""Diagnostics that survive a syntax error while the user types.

`y = torch.softmax(` does not parse until the line is finished; ruff keeps a file's other
diagnostics meanwhile instead of replacing them with the one syntax error. So does the
server: while a document does not parse, its last good findings are shown next to the
syntax error, each moved with the lines inserted or deleted above it and dropped when a line
it spans was edited. Its last good facts stand in for the project phase too, so findings of
other files that depend on this one do not flicker either.

In a notebook a cell that does not parse is left out and the others are checked; left out,
what it defines would vanish from the cells after it (a model whose softmax output a later
cell feeds to CrossEntropyLoss). So while a cell is broken its last good text stands in for
it in the check: the other cells keep their findings, and the cell keeps its own where its
lines are unchanged, next to its syntax error.
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import TYPE_CHECKING

from torchlint.static.lines import python_lines

if TYPE_CHECKING:
    from torchlint.findings import Finding
    from torchlint.notebook import Notebook
    from torchlint.static.engine import FileResult
    from torchlint.static.source import Source


def carried_over(good_text: str, good: FileResult, text: str, broken: FileResult) -> FileResult:
    """`broken` (the result of `text`, which does not parse) with `good`'s findings and facts
    moved onto `text` where the lines they span are unchanged."""
    from torchlint.static.engine import FileResult

    moved = _line_map(good_text, text)
    kept = [carried for finding in good.findings if (carried := _moved(finding, moved)) is not None]
    return FileResult(broken.path, [*broken.findings, *kept], _moved_facts(good.facts, moved), broken.parsed)


def _moved_facts(facts: dict, moved: dict[int, int]) -> dict:
    """`facts` (code -> kind -> records) with each record's `line` moved as its finding is, so
    the project phase still finds the record of a carried-over finding (TL301 and TL303 give a
    load to one of them by it); a record whose line was edited goes, like its finding."""
    shifted: dict = {}
    for code, kinds in facts.items():
        if not isinstance(kinds, dict):
            shifted[code] = kinds
            continue
        shifted[code] = {}
        for kind, records in kinds.items():
            if not isinstance(records, list):
                shifted[code][kind] = records
                continue
            kept = []
            for record in records:
                line = record.get("line") if isinstance(record, dict) else None
                if not isinstance(line, int):
                    kept.append(record)
                elif line in moved:
                    kept.append({**record, "line": moved[line]})
            shifted[code][kind] = kept
    return shifted


def _moved(finding: Finding, moved: dict[int, int]) -> Finding | None:
    """`finding` on the lines `moved` maps its lines to, or None when a line it spans was
    edited (it may no longer hold). No fix: its edits point at the text it was found in."""
    location = finding.location
    start, end = moved.get(location.line), moved.get(location.end_line)
    if start is None or end is None or end - start != location.end_line - location.line:
        return None
    return dataclasses.replace(finding, location=dataclasses.replace(location, line=start, end_line=end), fix=None)


@dataclasses.dataclass
class GoodCells:
    """A notebook's code cells as they last all parsed: how many cells it had (a cell added
    or removed since shifts the positions, and the texts no longer belong), each code
    cell's text by position."""

    count: int
    texts: dict[int, str]


def good_cells(notebook: Notebook) -> GoodCells:
    return GoodCells(len(notebook.document.get("cells") or ()), {cell.index: cell.text for cell in notebook.cells})


def with_good_cells(notebook: Notebook, good: GoodCells) -> tuple[Source, dict[int, tuple[str, str]]] | None:
    """The notebook with each broken cell's last good text in its place, and for each such
    cell (by number) its (good text, text now); None when a broken cell has no good text (or
    the cells moved)."""
    import json

    from torchlint.notebook.document import _source_text
    from torchlint.static.source import decode_notebook

    cells = list(notebook.document.get("cells") or ())
    if len(cells) != good.count:
        return None
    swapped: dict[int, tuple[str, str]] = {}
    for broken in notebook.broken:
        index = broken.number - 1
        if index not in good.texts:
            return None
        swapped[broken.number] = (good.texts[index], _source_text(cells[index], index))
        cells[index] = {**cells[index], "source": good.texts[index]}
    source = decode_notebook(json.dumps({**notebook.document, "cells": cells}).encode("utf-8", "surrogatepass"))
    if source.text is None or source.notebook is None or source.notebook.broken:
        return None
    return source, swapped


def cells_carried_over(checked: FileResult, stand_in: Notebook, notebook: Notebook, swapped: dict[int, tuple[str, str]]) -> FileResult:
    """`checked` (the result of the notebook with good texts standing in for its broken
    cells) with the findings in those cells moved onto their text now, in cell coordinates,
    and each broken cell's syntax error."""
    from torchlint.notebook.cells import broken_cell_findings, to_cells
    from torchlint.static.engine import FileResult

    kept: list[Finding] = []
    for finding in checked.findings:
        cell = finding.cell or stand_in.cell_position(finding.location.line)[0]
        if cell not in swapped:
            kept.append(finding)
            continue
        (in_cell,) = to_cells([finding], {checked.path: stand_in}) if finding.cell is None else (finding,)
        carried = _moved(in_cell, _line_map(*swapped[cell]))
        if carried is not None:
            kept.append(carried)
    return FileResult(checked.path, [*kept, *broken_cell_findings(checked.path, notebook)], checked.facts, checked.parsed)


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
