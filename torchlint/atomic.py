"""Write files so that an interrupted run leaves either the old or the new content."""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tempfile
from pathlib import Path
from typing import Iterator


def write_atomic(path: Path, data: str | bytes, *, encoding: str = "utf-8") -> None:
    """Write to a temp file in the same folder, flush it to disk, then rename over `path`,
    keeping the original file's permission bits."""
    path = Path(path)
    payload = data.encode(encoding) if isinstance(data, str) else data
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def write_through_link(path: Path, data: str | bytes) -> None:
    """`write_atomic` to the file a symbolic link points at: the link stays a link (replacing
    it with a regular file would silently fork the content it shares)."""
    write_atomic(Path(os.path.realpath(path)), data)


@contextlib.contextmanager
def atomic_text_stream(path: Path) -> Iterator[io.StringIO]:
    buffer = io.StringIO()
    yield buffer
    write_atomic(path, buffer.getvalue())
