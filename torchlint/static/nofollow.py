"""Open, read and write inside a folder without following symbolic links and without blocking.

The cache folder lives in the checked tree, so a pull request can commit one: a `v1` that
links to `~/.ssh`, an entry that is a FIFO. Every step below the folder goes through a
descriptor of the folder above it (`dir_fd`) opened with O_NOFOLLOW, so a link anywhere
below is an error, never a way out; files are opened with O_NONBLOCK and read only when
fstat says they are regular files of a bounded size.

POSIX only: where `dir_fd` or O_NOFOLLOW is missing (Windows), `SUPPORTED` is False and the
cache is not used at all rather than used unsafely.
"""

from __future__ import annotations

import os
import stat

SUPPORTED = (
    all(hasattr(os, name) for name in ("O_DIRECTORY", "O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC"))
    and {os.open, os.mkdir, os.rename, os.unlink} <= os.supports_dir_fd
)
_DIR = (os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC) if SUPPORTED else 0
_READ = (os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC) if SUPPORTED else 0
_CREATE = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC) if SUPPORTED else 0


def open_folder(name: str, dir_fd: int | None = None, *, create: bool = False) -> int | None:
    """A descriptor of the folder `name` (inside `dir_fd`, if given); None when it does not
    exist. OSError when it is a link, or anything but a folder."""
    if create:
        try:
            os.mkdir(name, 0o777, dir_fd=dir_fd)
        except FileExistsError:
            pass
    try:
        return os.open(name, _DIR, dir_fd=dir_fd)
    except FileNotFoundError:
        return None


def read_regular(dir_fd: int, name: str, limit: int) -> bytes | None:
    """The bytes of `name` in `dir_fd` when it is a regular file of at most `limit` bytes;
    None for anything else (absent, a link, a FIFO, a folder, too big, unreadable)."""
    try:
        fd = os.open(name, _READ, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks) if size <= limit else None  # grew while being read
    except OSError:
        return None
    finally:
        os.close(fd)


def create_file(dir_fd: int, name: str, data: bytes) -> bool:
    """Write a new file `name`; False when something of that name is already there."""
    try:
        fd = os.open(name, _CREATE, 0o644, dir_fd=dir_fd)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return True


def replace_file(dir_fd: int, name: str, data: bytes) -> None:
    """Write `name` whole or not at all: a new temporary file, renamed over whatever entry
    had the name (a rename replaces a link or a FIFO itself, never what it points at)."""
    temp = f".tmp-{os.urandom(8).hex()}"  # os.urandom: `secrets` costs every run an import
    fd = os.open(temp, _CREATE, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(temp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
