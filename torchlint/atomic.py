"""Write files so that an interrupted run leaves either the old or the new content."""

from __future__ import annotations

import contextlib
import io
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Iterator


#: Temp files are `.<name>.torchlint-<pid>-<random>.tmp`: hidden, never a `.py` that would be
#: checked, and owned by a process that can be asked whether it still runs.
_TEMP = re.compile(r"^\..+\.torchlint-(?P<pid>[0-9]+)-[^.]+\.tmp$")
_swept: set[str] = set()


def write_atomic(path: Path, data: str | bytes, *, encoding: str = "utf-8") -> None:
    """Write to a temp file in the same folder, flush it to disk, then rename over `path`,
    keeping the original file's permission bits."""
    path = Path(path)
    payload = data.encode(encoding) if isinstance(data, str) else data
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    fd, temp = temp_file_beside(path)
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


def temp_file_beside(path: Path) -> tuple[int, str]:
    """A new hidden temp file in `path`'s folder (so a rename onto `path` stays on one file
    system), open for writing, after sweeping what killed runs left there."""
    _sweep(path.parent)
    return tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.torchlint-{os.getpid()}-", suffix=".tmp")


def _sweep(folder: Path) -> None:
    """Remove the temp files that killed runs (SIGKILL, power loss) left in `folder`: those of
    processes that no longer exist. Once per folder per process; POSIX only, where asking
    `kill(pid, 0)` is harmless (on Windows os.kill would end the process)."""
    key = os.path.abspath(folder)
    if os.name != "posix" or key in _swept:
        return
    _swept.add(key)
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        match = _TEMP.match(name)
        if match is None or _alive(int(match.group("pid"))):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, name))


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process, or no way to tell: keep its file
    return True


@contextlib.contextmanager
def atomic_text_stream(path: Path) -> Iterator[io.StringIO]:
    buffer = io.StringIO()
    yield buffer
    write_atomic(path, buffer.getvalue())
