"""Events: one JSON object per line, written as it happens, read back by the parent.

Each event is encoded by ``encode_event`` and written whole, so a child killed by SIGABRT,
SIGSEGV or the timeout leaves every event written before its death; the reader skips a torn
last line. JSON only: the parent never unpickles anything. ``EventWriter`` appends to a file
(tests, benchmarks); ``torchlint run`` itself uses the pipe of ``runtime.channel``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator


def encode_event(event: str, fields: dict[str, Any]) -> bytes:
    line = json.dumps({"event": event, **fields}, default=repr, ensure_ascii=False) + "\n"
    return line.encode("utf-8", "replace")


class EventWriter:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        # Not inheritable: processes the target starts must not write into our channel.
        self._fd = os.open(os.fspath(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def emit(self, event: str, **fields: Any) -> None:
        self._write(encode_event(event, fields))

    def _write(self, data: bytes) -> None:
        os.write(self._fd, data)

    def close(self) -> None:
        os.close(self._fd)


def parse_events(data: bytes) -> Iterator[dict[str, Any]]:
    """Every complete, well-formed event in ``data``; a torn or garbled line is skipped."""
    for raw in data.splitlines():
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("event"), str):
            yield event


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    try:
        data = path.read_bytes()
    except OSError:
        return
    yield from parse_events(data)
