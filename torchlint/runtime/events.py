"""The child's evidence channel: one JSON object per line, appended as it happens.

Each event is written with a single ``os.write`` on an ``O_APPEND`` descriptor, so a child
killed by SIGABRT, SIGSEGV or the timeout leaves every event written before its death; the
reader skips a torn last line. JSON only: the parent never unpickles anything.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator


class EventWriter:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        # Not inheritable: processes the target starts must not write into our channel.
        self._fd = os.open(os.fspath(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def emit(self, event: str, **fields: Any) -> None:
        line = json.dumps({"event": event, **fields}, default=repr, ensure_ascii=False) + "\n"
        os.write(self._fd, line.encode("utf-8", "replace"))

    def close(self) -> None:
        os.close(self._fd)


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    """Every complete, well-formed event in the file; a torn or garbled line is skipped."""
    try:
        data = path.read_bytes()
    except OSError:
        return
    for raw in data.splitlines():
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("event"), str):
            yield event
