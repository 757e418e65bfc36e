"""Run a notebook in the child as `python` would run a script: its code cells joined in
order as `__main__`, IPython magics and shell lines skipped (they are masked to `pass`),
`%%bash`-like cells left out.

The code is compiled under the notebook's own path, so every frame, probe event and static
finding share one file name and one line numbering (the joined one); `linecache` gets the
joined text, so tracebacks and evidence quote the code, not the JSON; `Site.short()` names
the cell. `display()`, which IPython puts in builtins, prints its arguments.
"""

from __future__ import annotations

import builtins
import linecache
import os
import sys
import types
from pathlib import Path


def _display(*objects, **_options) -> None:
    for value in objects:
        print(repr(value))


def run_notebook(path: Path) -> None:
    from torchlint.notebook import Notebook
    from torchlint.static.lines import python_lines
    from torchlint.runtime.frames import CELL_MAPS

    notebook = Notebook.parse(path.read_bytes())
    filename = str(path)
    linecache.cache[filename] = (len(notebook.source), None, python_lines(notebook.source, True), filename)
    CELL_MAPS[os.path.abspath(filename)] = notebook.cell_position
    code = compile(notebook.source, filename, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=filename, __builtins__=builtins, display=_display)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved
