"""What the server checks of a document: the seam between editor documents and source text.

A `.py`/`.pyi` document is its own source. A notebook is not: its source is its code cells
joined, and findings must map back to cells. Notebook reading lives in the notebook support
of `torchlint check`; when it is there, `document_source` is the one place to route `.ipynb`
through it (and `is_checked` the one place to accept the suffix).
"""

from __future__ import annotations

from pathlib import PurePath

from torchlint.config import STANDALONE_NAMES

PYTHON_SUFFIXES = (".py", ".pyi")
NOTEBOOK_SUFFIX = ".ipynb"
CONFIG_NAMES = frozenset({"pyproject.toml", *STANDALONE_NAMES})


def is_checked(path: PurePath) -> bool:
    """Whether the server publishes diagnostics for a document at `path`."""
    return path.suffix in PYTHON_SUFFIXES


def document_source(path: PurePath, text: str) -> str | None:
    """The Python source to check for the document's text, or None when the server does
    not check this kind of document (yet: notebooks, see the module docstring)."""
    if path.suffix in PYTHON_SUFFIXES:
        return text
    return None


def is_config_file(path: PurePath) -> bool:
    """A file whose change can change the configuration of some project."""
    return path.name in CONFIG_NAMES
