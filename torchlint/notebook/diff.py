"""`--diff` for a notebook: one unified diff per changed cell, named after the cell, of the
code as Jupyter shows it (not of the JSON, where every line is a quoted string)."""

from __future__ import annotations

import difflib

from torchlint.notebook.document import Notebook
from torchlint.notebook.magics import split_lines


def notebook_diff(path: str, notebook: Notebook, changed: dict[int, str]) -> str:
    parts = []
    for cell in notebook.cells:
        if cell.index not in changed:
            continue
        before, after = split_lines(cell.text), split_lines(changed[cell.index])
        # difflib needs line ends to tell lines apart; the cell's last line usually has none
        before, after = _ended(before), _ended(after)
        parts.append("".join(difflib.unified_diff(
            before, after, fromfile=f"a/{path}:cell {cell.number}", tofile=f"b/{path}:cell {cell.number}")))
    return "".join(parts)


def _ended(lines: list[str]) -> list[str]:
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"
    return lines
