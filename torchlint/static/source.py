"""Read a file's bytes into text the way Python would, or say clearly why not."""

from __future__ import annotations

import codecs
import errno
import hashlib
import io
import os
import re
import stat
import tokenize
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=]", re.MULTILINE)


@dataclass(frozen=True)
class FileState:
    """What a file was when it was read: a fix replaces the file only while it is still this
    file with these bytes (an editor's save during the run changes at least one)."""

    device: int
    inode: int
    mtime_ns: int
    size: int
    digest: bytes

    @classmethod
    def of(cls, info: os.stat_result, data: bytes) -> "FileState":
        return cls(info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size, content_digest(data))

    def same_file(self, info: os.stat_result) -> bool:
        return (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size) == (self.device, self.inode, self.mtime_ns, self.size)


def content_digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


@dataclass(frozen=True)
class Source:
    text: str | None
    problem: str | None = None
    line: int = 1
    column: int = 1
    encoding: str = "utf-8"
    bom: bool = False
    #: Set for a Jupyter notebook: `text` is its code cells joined (torchlint.notebook).
    notebook: Any = None
    #: The file as it was read, for a file read from disk.
    state: FileState | None = None

    def encode(self, text: str) -> bytes:
        """Bytes for `text` in this file's own encoding (fixes keep a latin-1 file latin-1);
        for a notebook, its JSON with `text` (the fixed joined cells) put back into the cells."""
        if self.notebook is not None:
            return self.notebook.splice(text)
        data = text.encode(self.encoding)
        return (b"\xef\xbb\xbf" + data) if self.bom else data


#: Bigger files are not read: no hand-written module is this big, and a file that is (a data
#: dump with a .py name) would take minutes and gigabytes to parse.
MAX_FILE_BYTES = 10_000_000


#: Notebooks carry their outputs (plots, images) inline; their code is what gets parsed.
MAX_NOTEBOOK_BYTES = 100_000_000


def read_bytes(path: Path, limit: int | None = None) -> tuple[bytes | None, str | None]:
    """(content, None) or (None, why it cannot be read). Only regular files are read: a FIFO
    would block forever and a device (a link to /dev/zero) never ends. The file is opened
    without blocking and judged by `fstat` on the open descriptor, so it cannot be swapped
    for something else between the check and the read."""
    data, problem, _ = read_file(path, limit)
    return data, problem


def read_file(path: Path, limit: int | None = None) -> tuple[bytes | None, str | None, FileState | None]:
    """`read_bytes`, and the state of the file the bytes came from."""
    data, problem, info = _read_regular(path, limit)
    return data, problem, None if data is None or info is None else FileState.of(info, data)


def _read_regular(path: Path, limit: int | None) -> tuple[bytes | None, str | None, os.stat_result | None]:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except IsADirectoryError:
        return None, "is a directory, not a file", None
    except FileNotFoundError:
        return None, "no such file (a broken or looping symbolic link?)", None
    except PermissionError:
        return None, "permission denied", None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, "symbolic link loop", None
        return None, f"cannot read: {exc.strerror or exc}", None
    if limit is None:
        limit = MAX_NOTEBOOK_BYTES if str(path).lower().endswith(".ipynb") else MAX_FILE_BYTES
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            return None, "is a directory, not a file", None
        if not stat.S_ISREG(info.st_mode):
            return None, f"not a regular file ({_kind(info.st_mode)}); only regular files are read", None
        if info.st_size > limit:
            return None, f"file is larger than {limit // 1_000_000} MB ({info.st_size:,} bytes); not read", None
        chunks = []
        size = 0
        while True:
            chunk = os.read(fd, max(info.st_size - size, 0) + 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # grew while being read
                return None, f"file is larger than {limit // 1_000_000} MB; not read", None
        return b"".join(chunks), None, info
    except OSError as exc:
        return None, f"cannot read: {exc.strerror or exc}", None
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a file"


def read_source(path: Path) -> Source:
    """The Python text of `path`: a .py file decoded, a notebook's code cells joined."""
    data, problem, state = read_file(path)
    if data is None:
        return Source(None, problem)
    return replace(decode_file(path, data), state=state)


def decode_file(path: Path | str, data: bytes) -> Source:
    from torchlint.notebook import is_notebook

    return decode_notebook(data) if is_notebook(path) else decode_source(data)


def decode_notebook(data: bytes) -> Source:
    """A notebook's joined code cells, or why the file is not a notebook that can be read."""
    from torchlint.notebook import Notebook, NotebookError

    try:
        notebook = Notebook.parse(data)
    except NotebookError as exc:
        return Source(None, str(exc), line=exc.line, column=exc.column)
    return Source(notebook.source, notebook=notebook)


def decode_source(data: bytes) -> Source:
    if b"\x00" in data:
        offset = data.index(b"\x00")
        line = data.count(b"\n", 0, offset) + 1
        return Source(None, "file contains a NUL byte; it is not Python source", line=line)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        head = b"\n".join(data.splitlines()[:2])
        if _COOKIE.search(head):
            return Source(None, f"bad encoding declaration: {exc}")
        encoding = "utf-8"  # no cookie: the bytes themselves are not UTF-8; say where below
    try:
        codec = codecs.lookup(encoding)
        if not getattr(codec, "_is_text_encoding", True):
            # `# coding: rot13` (or hex, zlib, base64): Python refuses to run such a file.
            return Source(None, f"{encoding} is not a text encoding; Python cannot read source in it")
        text = data.decode(encoding)
    except LookupError as exc:
        return Source(None, f"bad encoding declaration: {exc}")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return Source(
            None,
            f"not valid {encoding} text: byte 0x{data[exc.start]:02x} cannot be decoded",
            line=line,
            column=column,
        )
    except UnicodeError as exc:  # codecs such as idna raise the base class
        return Source(None, f"not valid {encoding} text: {exc}")
    # tokenize names a file that starts with a UTF-8 BOM "utf-8-sig", and decoding with that
    # codec drops the BOM: the name, not the text, says it was there.
    bom = encoding == "utf-8-sig" or text.startswith("\ufeff")
    if text.startswith("\ufeff"):
        text = text[1:]
    return Source(text, encoding="utf-8" if encoding == "utf-8-sig" else encoding, bom=bom)
