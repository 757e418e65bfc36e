"""The user line in faulthandler's dump: where the target was at the deadline when the child's
watchdog could not run (the target held the interpreter lock in C code; ``child.watchdog``)."""

from __future__ import annotations

import os
import re
from typing import Any


_DUMP_THREAD = re.compile(r"^(?:Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\):\n((?:  File .*\n?)+)", re.MULTILINE)
_DUMP_FRAME = re.compile(r'^  File "(?P<path>[^"]+)", line (?P<line>\d+) in (?P<function>\S+)', re.MULTILINE)


def user_line_from_dump(output: str, is_user: Any) -> tuple[str, int] | None:
    """The main thread's innermost user line in faulthandler's dump (the last one in
    ``output``): the thread whose stack holds the child's ``main``."""
    blocks = list(_DUMP_THREAD.finditer(output))
    for block in reversed(blocks):
        frames = [(m["path"], int(m["line"]), m["function"]) for m in _DUMP_FRAME.finditer(block.group(1))]
        if not any(path.endswith(os.path.join("runtime", "child", "main.py")) for path, _, _ in frames):
            continue
        for path, line, _ in frames:  # most recent first
            if is_user(path):
                return path, line
        return None
    return None
