"""Which folder torchlint may use as its cache, and what in it is torchlint's to delete.

A cache folder is one torchlint created and marked, or one that held nothing else when it
was claimed (empty, or only what an older torchlint wrote: its tag, its .gitignore, its
`v<N>/` trees). `--cache-dir .` or `cache-dir = "src"` used to tag the project as a cache,
hide its new files from git with a `*` .gitignore, and let `torchlint clean` delete it,
`.git` included. Now such a folder is refused, and `clean` removes only torchlint's own
entries, and the folder itself only when that leaves it empty.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from torchlint.static import nofollow

#: Written by torchlint into a folder it created or claimed: the proof of ownership. The
#: CACHEDIR.TAG cannot be that proof: older versions wrote it into any folder they were given.
MARKER = "TORCHLINT_CACHE"
MARKER_TEXT = (
    "torchlint cache folder, format 1\n"
    "torchlint created this folder and owns every entry it wrote here; `torchlint clean` removes them.\n"
)
TAG = "CACHEDIR.TAG"
TAG_TEXT = "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by torchlint.\n"
GITIGNORE = ".gitignore"
GITIGNORE_TEXT = "# created by torchlint\n*\n"
#: `v1/`, `v2/`: one tree per cache format, holding one folder per fingerprint.
_FORMAT_TREE = re.compile(r"v\d+")
#: A fingerprint folder's name: Cache.fingerprint's 12-byte digest in hex.
_FINGERPRINT = re.compile(r"[0-9a-f]{24}")
_SMALL = 4096


def _ours(name: str) -> bool:
    return name in (MARKER, TAG, GITIGNORE) or _FORMAT_TREE.fullmatch(name) is not None


def _text_is(dir_fd: int, name: str, expected: str) -> bool:
    return nofollow.read_regular(dir_fd, name, _SMALL) == expected.encode()


def problem(folder: Path) -> str | None:
    """Why `folder` cannot be the cache; None when it is torchlint's, or may become so."""
    if not nofollow.SUPPORTED:
        return None  # the cache is simply off there (see nofollow)
    try:
        fd = nofollow.open_folder(str(folder))
    except OSError:
        return f"{folder} is not a torchlint cache folder: it is a symbolic link or not a folder"
    if fd is None:
        return None  # created on first use
    try:
        if _text_is(fd, MARKER, MARKER_TEXT):
            return None
        others = sorted(name for name in os.listdir(fd) if not _ours(name))
    except OSError as exc:
        return f"{folder} cannot be read: {exc.strerror or exc}"
    finally:
        os.close(fd)
    if not others:
        return None  # empty, or an older torchlint's: claimed on first use
    return (
        f"{folder} is not a torchlint cache folder: it holds {len(others)} "
        f"{'entry' if len(others) == 1 else 'entries'} torchlint did not write (such as {others[0]!r}); "
        "name a new or empty folder"
    )


def claim(folder: Path) -> int:
    """A descriptor of the cache folder, created, or claimed if `problem` allowed it: the
    marker, the tag and the `*` .gitignore are written into it, none over an existing file.
    OSError when it cannot be (a link, or files appeared meanwhile)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    fd = nofollow.open_folder(str(folder), create=True)
    if fd is None:
        raise FileNotFoundError(str(folder))
    try:
        if not _text_is(fd, MARKER, MARKER_TEXT):
            if any(not _ours(name) for name in os.listdir(fd)):
                raise PermissionError(f"{folder} holds entries torchlint did not write")
            nofollow.create_file(fd, TAG, TAG_TEXT.encode())
            nofollow.create_file(fd, GITIGNORE, GITIGNORE_TEXT.encode())
            # False: another run claimed it first (then its marker is there by now), or a
            # FIFO, a link or someone's file holds the name
            if not nofollow.create_file(fd, MARKER, MARKER_TEXT.encode()) and not _text_is(fd, MARKER, MARKER_TEXT):
                raise PermissionError(f"{folder}/{MARKER} is not torchlint's")
    except BaseException:
        os.close(fd)
        raise
    return fd


def recognised(folder: Path) -> bool:
    """Whether `folder` is a torchlint cache, of this version (its marker) or an older one
    (its CACHEDIR.TAG, or the default name)."""
    from torchlint.config import CACHE_DIR_NAME

    try:
        fd = nofollow.open_folder(str(folder))
    except OSError:
        return False
    if fd is None:
        return False
    try:
        return folder.name == CACHE_DIR_NAME or _text_is(fd, MARKER, MARKER_TEXT) or _text_is(fd, TAG, TAG_TEXT)
    finally:
        os.close(fd)


def release(folder: Path) -> tuple[bool, list[str]]:
    """Remove torchlint's own entries from `folder` (a `recognised` one), then the folder if
    that leaves it empty. Returns whether anything was removed, and the names of the entries
    that are not torchlint's, kept; a link is never followed, and nothing else is touched."""
    fd = nofollow.open_folder(str(folder))
    if fd is None:
        return False, []
    removed = False
    try:
        for name, text in ((TAG, TAG_TEXT), (GITIGNORE, GITIGNORE_TEXT)):
            if _text_is(fd, name, text):
                os.unlink(name, dir_fd=fd)
                removed = True
        for name in os.listdir(fd):
            if _FORMAT_TREE.fullmatch(name) and stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                removed = _release_format_tree(folder / name) or removed
        if _text_is(fd, MARKER, MARKER_TEXT):
            os.unlink(MARKER, dir_fd=fd)  # the folder goes back to whoever filled it
            removed = True
        kept = sorted(os.listdir(fd))
        if not kept:
            os.rmdir(folder)
            removed = True
        return removed, kept
    finally:
        os.close(fd)


def _release_format_tree(tree: Path) -> bool:
    """`v<N>/`: the fingerprint folders (their names are digests only torchlint makes) go
    whole; shutil.rmtree does not follow links. Anything else stays, and so does `v<N>/`."""
    import shutil  # `clean` only: not an import every check pays for

    removed = False
    for child in tree.iterdir():
        if _FINGERPRINT.fullmatch(child.name) and child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
            removed = True
    try:
        tree.rmdir()
    except OSError:
        return removed  # not empty: something in it is not torchlint's
    return True
