"""Which files `torchlint run` checks and reports: the target and what it imports.

Before the run (in the parent, while the child imports torch): the target's static import
closure (``torchlint.static.import_closure``), looked up from the target's folder (the
script's ``sys.path[0]``) and then the project root.

After the run, the files the program actually imported (the child's ``imported`` event:
every user module in ``sys.modules``) join it, which catches what the closure cannot see:
``importlib.import_module(name)``, a package installed from the project in editable mode,
``sys.path`` edits. A sibling script the target never imports is in neither, so its findings
are not in the report and do not set the exit code.
"""

from __future__ import annotations

import os
from pathlib import Path


def same_files(paths: list[str] | list[Path]) -> set[str]:
    return {os.path.realpath(str(p)) for p in paths}

