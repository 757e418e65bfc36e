"""Jupyter notebooks as Python modules: read (`Notebook.parse`), map positions back to cells,
write fixes back into the JSON. See `document.py`."""

from torchlint.notebook.document import SEPARATOR, SUFFIX, CodeCell, Notebook, NotebookError, is_notebook

__all__ = ["SEPARATOR", "SUFFIX", "CodeCell", "Notebook", "NotebookError", "is_notebook"]
