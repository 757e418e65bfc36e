"""`.torchlint_cache/`: per-file results keyed by content and path, under a fingerprint of
everything else that can change a result (torchlint's code, the enabled rules, plugin
versions, config that rules read). JSON only, never pickle; a corrupt entry is a miss and
is rewritten; writes are atomic so concurrent runs never see half an entry.

The folder is in the checked tree, so it is treated as hostile: it must be torchlint's own
(cache_folder), every step into it refuses links and FIFOs (nofollow), and an entry is used
only in exactly the shape torchlint writes (cache_entry)."""

from __future__ import annotations

import hashlib
import json
import os
import weakref
from pathlib import Path
from typing import Any

from torchlint import __version__
from torchlint.static import cache_folder, nofollow
from torchlint.static.cache_entry import valid_entry

_FORMAT = "1"
#: An entry larger than this is not read: its file's findings never come near it.
MAX_ENTRY_BYTES = 32 << 20


def entry_key(path: str, code: bytes, *, notebook: bool) -> str:
    """A file's entry: its content, and the path its rules were given. Rules read the path
    (test files are exempt from some; file facts, and the messages quoting them, hold it), so
    a file moved out of `tests/` or renamed is checked again, not served its old result.
    `notebook`: `code` is a notebook's joined code cells, which rules see differently."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(b"ipynb\0" if notebook else b"py\0")
    digest.update(path.encode("utf-8", "surrogatepass") + b"\0")
    digest.update(code)
    return digest.hexdigest()


def code_fingerprint(paths: list[Path]) -> str:
    """Stat (not read) every source file of torchlint and the rule plugins: an edited rule in
    a development checkout invalidates the cache even though the version did not change."""
    digest = hashlib.blake2b(digest_size=16)
    for root in paths:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith(".py"):
                    stat = os.stat(os.path.join(dirpath, name))
                    digest.update(f"{dirpath}/{name}:{stat.st_mtime_ns}:{stat.st_size};".encode())
    return digest.hexdigest()


class Cache:
    def __init__(self, folder: Path, fingerprint: str) -> None:
        """`folder`: the cache folder itself (`.torchlint_cache` in the project root, or
        `cache-dir`); entries go under a version and fingerprint folder inside it."""
        self.folder = folder
        self._fingerprint = fingerprint
        #: Why this folder cannot be the cache (it is not torchlint's); None when it can.
        #: The cache is then off: every lookup a miss, nothing written.
        self.problem = cache_folder.problem(folder)
        self._usable = nofollow.SUPPORTED and self.problem is None
        self._fd: int | None = None  # the fingerprint folder, opened once
        self._finalizer: weakref.finalize | None = None
        self.hits = 0
        self.misses = 0

    @property
    def usable(self) -> bool:
        """Whether entries are read and written (else every lookup is a miss)."""
        return self._usable

    @staticmethod
    def fingerprint(parts: dict[str, Any]) -> str:
        text = json.dumps({"torchlint": __version__, **parts}, sort_keys=True, default=str)
        return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        data = self._read(key) if self._usable else None
        if data is None:
            self.misses += 1
            return None
        self.hits += 1
        return data

    def _read(self, key: str) -> dict[str, Any] | None:
        try:
            folder = self._open(create=False)
            shard = None if folder is None else nofollow.open_folder(key[:2], folder)
        except OSError:
            return None  # a link or a file where a folder should be
        if shard is None:
            return None
        try:
            raw = nofollow.read_regular(shard, f"{key}.json", MAX_ENTRY_BYTES)
        finally:
            os.close(shard)
        if raw is None:
            return None
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):  # RecursionError: nesting past json's limit
            return None
        return data if valid_entry(data, key) else None

    def put(self, key: str, payload: dict[str, Any]) -> None:
        if not self._usable:
            return
        try:
            folder = self._open(create=True)
            shard = nofollow.open_folder(key[:2], folder, create=True)
            try:
                body = json.dumps({"key": key, **payload}, separators=(",", ":")).encode()
                nofollow.replace_file(shard, f"{key}.json", body)
            finally:
                os.close(shard)
        except OSError:
            # a read-only checkout, a link or a FIFO where a folder should be, a folder that
            # turned out not to be torchlint's: this run goes on uncached, trying no more
            self._usable = False

    def _open(self, *, create: bool) -> int | None:
        """The fingerprint folder, reached from the cache folder one step at a time, none of
        them a link; created (and the cache folder claimed) when `create`."""
        if self._fd is not None:
            return self._fd
        if create:
            top: int | None = cache_folder.claim(self.folder)
        else:
            top = nofollow.open_folder(str(self.folder))
            if top is None:
                return None
        try:
            tree = nofollow.open_folder(f"v{_FORMAT}", top, create=create)
        finally:
            os.close(top)
        if tree is None:
            return None
        try:
            self._fd = nofollow.open_folder(self._fingerprint, tree, create=create)
        finally:
            os.close(tree)
        if self._fd is not None:
            self._finalizer = weakref.finalize(self, os.close, self._fd)
        return self._fd
