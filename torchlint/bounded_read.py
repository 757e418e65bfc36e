"""One reader for every file a user can point torchlint at (a baseline, a reference, a
configuration, a notebook): regular files only, a size cap, and JSON nested no deeper than a
cap, each refused with a message that says which limit and where.

A baseline that is a link to /dev/zero would otherwise be read until memory runs out, a FIFO
would block forever, and `[[[[...]]]]` 100,000 deep ends in a RecursionError traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: Deeper than anything torchlint writes (a baseline or reference is 4 to 6 levels deep).
MAX_JSON_DEPTH = 64


class Unreadable(Exception):
    """The file cannot be used; the message names the file and why (``reason``: why alone)."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.reason = reason


def read_limited(path: Path | str, limit: int) -> bytes:
    """The bytes of `path`, a regular file of at most `limit` bytes."""
    from torchlint.static.source import read_bytes

    data, problem = read_bytes(Path(path), limit)
    if data is None:
        raise Unreadable(path, problem or "cannot be read")
    return data


def load_json(path: Path | str, limit: int, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON document in `path` (read as `read_limited` reads), nested at most `max_depth`."""
    data = read_limited(path, limit)
    try:
        document = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise Unreadable(path, f"JSON nested deeper than {max_depth} levels; not read") from None
    except UnicodeDecodeError as exc:
        raise Unreadable(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:
        raise Unreadable(path, f"not JSON ({exc})") from None
    check_depth(document, max_depth, str(path))
    return document


def check_depth(document: Any, max_depth: int, where: str) -> None:
    """Raise `Unreadable` when `document` nests lists and objects deeper than `max_depth`.
    Iterative: the point is to refuse what recursion could not walk."""
    stack = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > max_depth:
            raise Unreadable(where, f"JSON nested deeper than {max_depth} levels; not read")
        stack.extend((child, depth + 1) for child in children)
