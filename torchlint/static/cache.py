"""`.torchlint_cache/`: per-file results keyed by content and path, under a fingerprint of
everything else that can change a result (torchlint's code, the enabled rules, plugin
versions, config that rules read). JSON only, never pickle; a corrupt entry is a miss and
is rewritten; writes are atomic so concurrent runs never see half an entry."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from torchlint import __version__
from torchlint.static.cache_entry import valid_entry

_FORMAT = "1"
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by torchlint.\n"


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
        self.directory = folder / f"v{_FORMAT}" / fingerprint
        self._ready = False
        self.hits = 0
        self.misses = 0

    @staticmethod
    def fingerprint(parts: dict[str, Any]) -> str:
        text = json.dumps({"torchlint": __version__, **parts}, sort_keys=True, default=str)
        return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()

    def _entry(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry for `key`, only in exactly the shape `put` writes (cache_entry)."""
        try:
            with open(self._entry(key), "rb") as handle:
                data = json.loads(handle.read())
        except (OSError, ValueError, RecursionError):  # RecursionError: nesting past json's limit
            self.misses += 1
            return None
        if not valid_entry(data, key):
            self.misses += 1
            return None
        self.hits += 1
        return data

    def put(self, key: str, payload: dict[str, Any]) -> None:
        try:
            self._prepare()
            target = self._entry(key)
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"key": key, **payload}, handle, separators=(",", ":"))
            os.replace(temp, target)
        except OSError:
            pass  # a read-only checkout simply runs uncached

    def _prepare(self) -> None:
        if self._ready:
            return
        top = self.directory.parents[1]
        top.mkdir(parents=True, exist_ok=True)
        for name, text in (("CACHEDIR.TAG", _TAG), (".gitignore", "# created by torchlint\n*\n")):
            path = top / name
            if not path.exists():
                path.write_text(text)
        self._ready = True


def is_cache_folder(folder: Path) -> bool:
    """Whether `folder` is one torchlint made: its CACHEDIR.TAG says so. `torchlint clean`
    removes nothing else, so a mistaken `cache-dir = "src"` cannot delete a source tree."""
    try:
        return (folder / "CACHEDIR.TAG").read_text(encoding="utf-8", errors="replace") == _TAG
    except OSError:
        return False
