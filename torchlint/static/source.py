"""Read a file's bytes into text the way Python would, or say clearly why not."""

from __future__ import annotations

import codecs
import io
import tokenize
from dataclasses import dataclass
import re
from pathlib import Path

_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=]", re.MULTILINE)


@dataclass(frozen=True)
class Source:
    text: str | None
    problem: str | None = None
    line: int = 1
    column: int = 1
    encoding: str = "utf-8"
    bom: bool = False

    def encode(self, text: str) -> bytes:
        """Bytes for `text` in this file's own encoding (fixes keep a latin-1 file latin-1)."""
        data = text.encode(self.encoding)
        return (b"\xef\xbb\xbf" + data) if self.bom else data


def read_bytes(path: Path) -> tuple[bytes | None, str | None]:
    """(content, None) or (None, why it cannot be read)."""
    try:
        return path.read_bytes(), None
    except IsADirectoryError:
        return None, "is a directory, not a file"
    except FileNotFoundError:
        return None, "no such file (a broken or looping symbolic link?)"
    except PermissionError:
        return None, "permission denied"
    except OSError as exc:
        return None, f"cannot read: {exc.strerror or exc}"


def read_source(path: Path) -> Source:
    data, problem = read_bytes(path)
    if data is None:
        return Source(None, problem)
    return decode_source(data)


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
        codecs.lookup(encoding)
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return Source(
            None,
            f"not valid {encoding} text: byte 0x{data[exc.start]:02x} cannot be decoded",
            line=line,
            column=column,
        )
    bom = text.startswith("\ufeff")
    if bom:
        text = text[1:]
    return Source(text, encoding="utf-8" if encoding == "utf-8-sig" else encoding, bom=bom)
