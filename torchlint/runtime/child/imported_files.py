"""The user's files the program imported, for the report's scope (``parent.scope``); child side."""

from __future__ import annotations

import os

from torchlint.lazy import file_of
from torchlint.static.import_closure import MAX_FILES


def imported_files(frames: object) -> list[str]:
    """Child side: the user's files among the modules the program imported (``frames``: the
    child's FrameClassifier, which tells user files from torch, torchlint and libraries)."""
    import sys

    from torchlint.runtime.frames import USER

    files = set()
    for module in list(sys.modules.values()):
        path = file_of(module)  # not getattr: that would execute libcst, 0.2 CPU-s of every run
        if isinstance(path, str) and path.endswith(".py") and frames.verdict(path) == USER:  # type: ignore[attr-defined]
            files.add(os.path.abspath(path))
    return sorted(files)[:MAX_FILES]
