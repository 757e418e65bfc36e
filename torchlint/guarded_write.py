"""Replace a file that torchlint read with new content, only while it is still the file that
was read, keeping what makes it the user's: its owner, group, mode, extended attributes and
hard links.

`--fix` and `--add-noqa` read a file, compute for a while, then write. An editor may save the
file in between, another torchlint may fix it, a CI step may check it out again: writing then
would replace content torchlint never read. So the file is compared with its `FileState`
(device, inode, mtime, size and a digest of its bytes) just before it is replaced, under an
exclusive lock on the file that other torchlint processes also take.

Two ways to write, one rule for choosing:
- by rename (a temp file in the same folder, flushed, given the old owner, group and mode,
  then renamed over the name): a run killed at any moment leaves the old or the new bytes;
- in place (the same inode rewritten under the lock) when a rename would lose something the
  file has: a second hard link, extended attributes (ACLs, SELinux labels), or an owner the
  temp file cannot be given (a user's group-writable file fixed by another user).
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from torchlint.atomic import temp_file_beside
from torchlint.static.source import FileState, content_digest

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; the state comparison still guards
    fcntl = None  # type: ignore[assignment]


class NotReplaced(Exception):
    """The file was left as it is; the message says why, in words for a TL002 finding."""


@dataclass(frozen=True)
class WritePolicy:
    #: Symbolic links are followed only to files inside this folder (the project's root).
    root: Path | None = None
    #: Write files whose permissions say they are read-only (`--fix-read-only`).
    read_only_too: bool = False


def refusal(path: Path, policy: WritePolicy) -> str | None:
    """Why `path` must not be written at all, before anything is computed for it."""
    real = os.path.realpath(path)
    if policy.root is not None and real != os.path.abspath(path) and not _inside(real, os.path.realpath(policy.root)):
        return f"is a symbolic link to {real}, outside the project ({policy.root}); not written"
    if not policy.read_only_too and _read_only(real):
        return "the file is read-only; left unchanged (--fix-read-only writes it anyway)"
    return None


def replace_unchanged(path: Path, read: FileState | None, data: bytes, policy: WritePolicy = WritePolicy()) -> None:
    """Write `data` to `path` (through a symbolic link to its target) if the file is still
    what `read` describes; raise `NotReplaced` if it is not or must not be written, `OSError`
    if the write itself fails (the file is then unchanged)."""
    problem = refusal(path, policy)
    if problem is not None:
        raise NotReplaced(problem)
    if read is None:
        raise NotReplaced("the file's content on disk was never read; nothing written")
    real = Path(os.path.realpath(path))
    with _locked(real) as (fd, info):
        _still_as_read(fd, info, read)
        if _keeps_everything_when_renamed(real, info):
            if _rename_over(real, info, data, read):
                return
        _rewrite(real, data)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _read_only(path: str) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False  # the write says what is wrong
    # Root may write anything, so the bits are asked too: a 0444 file means "do not edit".
    return not (mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) or not os.access(path, os.W_OK)


@contextlib.contextmanager
def _locked(real: Path) -> Iterator[tuple[int, os.stat_result]]:
    """The file open for reading and writing, under an exclusive advisory lock: two torchlint
    runs fixing one file take turns, and the second sees that the first changed it."""
    flags = getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        # Read-only is enough for the lock and the comparison; a rename needs no more.
        fd = os.open(real, os.O_RDONLY | flags)
    except FileNotFoundError:
        raise NotReplaced("the file was removed after it was read; nothing written") from None
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd, os.fstat(fd)
    finally:
        os.close(fd)  # closing releases the lock


def _still_as_read(fd: int, info: os.stat_result, read: FileState) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise NotReplaced("the file is no longer a regular file; nothing written")
    if read.same_file(info) and content_digest(_read_all(fd)) == read.digest:
        return
    raise NotReplaced("the file changed on disk after torchlint read it (an editor's save?); "
                      "left as it is now, run the fix again")


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _keeps_everything_when_renamed(real: Path, info: os.stat_result) -> bool:
    if info.st_nlink > 1:
        return False  # a rename would leave the other names with the old text
    try:
        return not os.listxattr(real)
    except (AttributeError, OSError):
        return True  # no extended attributes here to lose


def _rename_over(real: Path, info: os.stat_result, data: bytes, read: FileState) -> bool:
    """Write a temp file with the file's owner, group and mode and rename it over the file.
    False (nothing changed) when the temp file cannot be given the owner: write in place."""
    temp_fd, temp = temp_file_beside(real)
    try:
        with os.fdopen(temp_fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            temp_info = os.fstat(handle.fileno())
            if hasattr(os, "fchown") and (temp_info.st_uid, temp_info.st_gid) != (info.st_uid, info.st_gid):
                try:
                    os.fchown(handle.fileno(), info.st_uid, info.st_gid)
                except PermissionError:
                    os.unlink(temp)
                    return False
            mode = stat.S_IMODE(info.st_mode)  # set after chown, which clears set-id bits
            if hasattr(os, "fchmod"):
                os.fchmod(handle.fileno(), mode)
            else:  # Windows before Python 3.13
                os.chmod(temp, mode)
            os.fsync(handle.fileno())
        # The content was compared above under the lock; what can still change before the
        # rename is the name itself (another program renaming its own save over it).
        if not read.same_file(os.stat(real)):
            raise NotReplaced("the file changed on disk after torchlint read it (an editor's save?); "
                              "left as it is now, run the fix again")
        os.replace(temp, real)
        return True
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _rewrite(real: Path, data: bytes) -> None:
    """The same inode, rewritten (while the caller holds the lock): every hard link,
    attribute and owner stays. Not atomic against a kill, which is why a rename is preferred
    where it keeps everything."""
    fd = os.open(real, os.O_WRONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0))
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    finally:
        os.close(fd)
