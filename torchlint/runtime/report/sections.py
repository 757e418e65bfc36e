"""A probe's part of the `torchlint run` report: what ``torchlint_run_section`` returns.

Parent side, no torch. A probe publishes plain data from the child (``ctx.publish``); its
plugin turns that data into terminal lines, an HTML fragment and summary cards here, so the
engine's reports hold no probe's layout.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchlint.runtime.merge.matching import display_path


@dataclass(frozen=True)
class RunSection:
    #: Short name, used as the HTML section's anchor and in the report's title ("memory").
    title: str
    #: Lines for the terminal report, the first one a heading.
    text: tuple[str, ...] | list[str] = ()
    #: An HTML fragment (``<section><h2>..</h2>..</section>``), every value escaped.
    html: str = ""
    #: Summary cards at the top of the HTML report: (label, value, note).
    cards: tuple[tuple[str, str, str], ...] = ()
    #: What the run's title adds for this probe (``--compile=aot_eager``), if anything.
    flag: str = ""


def sections_of(pm: Any, results: dict[str, dict], cwd: Path) -> list[RunSection]:
    """Each published result's section, in the order the probes published them."""
    sections = []
    for name, result in results.items():
        for section in pm.hook.torchlint_run_section(name=name, result=result, cwd=cwd):
            if section is not None:
                sections.append(section)
    return sections


def where(path: str | None, line: int | None, cwd: Path) -> str:
    """`train.py:12`, relative to where torchlint runs, for a section's text; in a notebook,
    `nb.ipynb:cell 3:2` (the run counts the lines of its joined cells)."""
    if not path:
        return "?"
    shown = display_path(path, cwd)
    if not line:
        return shown
    if path.lower().endswith(".ipynb"):
        position = _cell_position(os.path.realpath(cwd / path), line)
        if position is not None:
            return f"{shown}:cell {position[0]}:{position[1]}"
    return f"{shown}:{line}"


def _cell_position(path: str, line: int) -> tuple[int, int] | None:
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        return None
    notebook = _notebook(path, stamp)
    return notebook.cell_position(line) if notebook is not None else None


@functools.lru_cache(maxsize=8)
def _notebook(path: str, stamp: int) -> Any:
    from torchlint.notebook import Notebook, NotebookError

    try:
        return Notebook.parse(Path(path).read_bytes())
    except (OSError, NotebookError):
        return None
