"""What the server checks of a document: the seam between editor documents and source text.

A `.py`/`.pyi` document is its own source. A notebook is not: its source is its code cells
joined (torchlint/notebook, as `torchlint check` reads it), and findings map back to cells.
A notebook reaches the server two ways, and both become the text of an `.ipynb` file:

- a client with notebook sync (LSP 3.17) sends the notebook and a text document per cell;
  `notebook_json` writes those cells as a notebook (in the order the client lists them), so
  the check sees what Jupyter would run and each finding names the cell it is in;
- a client without it may open the `.ipynb` file as a plain text document: its JSON (or,
  through a plugin like jupytext.nvim, the notebook as a `# %%` script, checked as Python).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING

from torchlint.config import STANDALONE_NAMES

if TYPE_CHECKING:
    from torchlint.static.source import Source

PYTHON_SUFFIXES = (".py", ".pyi")
NOTEBOOK_SUFFIX = ".ipynb"
CONFIG_NAMES = frozenset({"pyproject.toml", *STANDALONE_NAMES})
#: Cell languages checked as Python (a notebook's other cells are kept for their numbers).
PYTHON_CELL_LANGUAGES = frozenset({"python", "ipython", "python3"})


def is_notebook(path: PurePath) -> bool:
    return path.suffix.lower() == NOTEBOOK_SUFFIX


def is_checked(path: PurePath) -> bool:
    """Whether the server publishes diagnostics for a document at `path`."""
    return path.suffix in PYTHON_SUFFIXES or is_notebook(path)


def document_source(path: PurePath, text: str) -> Source | None:
    """The Python source to check for the document's text (for a notebook, its joined code
    cells and the notebook, or why its JSON cannot be read), or None when the server does not
    check this kind of document."""
    from torchlint.static.source import Source, decode_notebook

    if path.suffix in PYTHON_SUFFIXES:
        return Source(text)
    if is_notebook(path):
        if not text.lstrip().startswith("{"):
            # Not JSON: a notebook an editor plugin shows as a script (jupytext.nvim's
            # `# %%` cells, magics commented out), or an empty new file. Python, then.
            return Source(text)
        return decode_notebook(text.encode("utf-8", "surrogatepass"))
    return None


def is_config_file(path: PurePath) -> bool:
    """A file whose change can change the configuration of some project."""
    return path.name in CONFIG_NAMES


@dataclass(frozen=True)
class SyncedCell:
    """One cell of a notebook the client synchronizes."""

    uri: str  # its text document, as the client names it
    version: int | None
    text: str
    python: bool  # a code cell in Python (else markdown, or another language: not checked)


def notebook_json(cells: list[SyncedCell]) -> str:
    """The cells as a notebook file's JSON: code cells in Python, the others as markdown,
    so that cell N of the check is the client's N-th cell."""
    document = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": cell.text}
            if cell.python
            else {"cell_type": "markdown", "metadata": {}, "source": cell.text}
            for cell in cells
        ],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document, ensure_ascii=False)
