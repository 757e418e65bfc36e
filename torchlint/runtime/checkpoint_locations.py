"""Where a torch checkpoint's storages live, read without unpickling it.

``torch.save`` writes each storage as a persistent id ``('storage', StorageType, key,
location, numel)``. Walking the pickle's opcodes with ``pickletools`` and keeping a small
model of the stack and memo is enough to read those tuples: no object is ever constructed,
no global is ever imported, so a hostile file cannot run code here. Handles the zip format
(``archive/data.pkl``) and the legacy format (a sequence of pickles at the file's start).
"""

from __future__ import annotations

import io
import pickletools
import zipfile
from collections import Counter
from typing import BinaryIO, Iterator

#: A data.pkl larger than this is not scanned (it holds objects, not tensor data).
MAX_PICKLE_BYTES = 256 * 1024 * 1024
_LEGACY_PICKLES = 4  # magic number, protocol, sys info, then the object with the storages

_STRINGS = {"BINUNICODE", "SHORT_BINUNICODE", "UNICODE", "BINUNICODE8", "SHORT_BINSTRING", "BINSTRING", "STRING"}
_TUPLE_N = {"TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3}
_PUTS = {"BINPUT", "LONG_BINPUT", "PUT"}
_GETS = {"BINGET", "LONG_BINGET", "GET"}


def storage_locations(stream: BinaryIO) -> dict[str, int] | None:
    """{location: number of storages}, or None when the file is not a torch checkpoint."""
    start = stream.tell()
    if zipfile.is_zipfile(stream):
        stream.seek(start)
        with zipfile.ZipFile(stream) as archive:
            names = [n for n in archive.namelist() if n.endswith("data.pkl")]
            if not names:
                return None
            info = archive.getinfo(sorted(names, key=len)[0])
            if info.file_size > MAX_PICKLE_BYTES:
                return None
            return _count(persistent_ids([archive.read(info)]))
    stream.seek(start)
    return _count(persistent_ids(_legacy_pickles(stream)))


def _legacy_pickles(stream: BinaryIO) -> Iterator[bytes]:
    data = stream.read(MAX_PICKLE_BYTES)
    buffer = io.BytesIO(data)
    for index in range(_LEGACY_PICKLES):
        begin = buffer.tell()
        try:
            for _op in pickletools.genops(buffer):
                pass
        except Exception:
            if index == 0:
                raise  # not a pickle at all: not a checkpoint
            return
        yield data[begin:buffer.tell()]


def _count(ids: Iterator[tuple]) -> dict[str, int] | None:
    # Tensors that share a storage (views) repeat its persistent id: count each key once.
    keys: dict[object, str] = {}
    try:
        for pid in ids:
            if len(pid) >= 4 and pid[0] == "storage" and isinstance(pid[3], str):
                keys.setdefault(pid[2], pid[3])
    except Exception:  # not a pickle, or a truncated one
        return None
    return dict(Counter(keys.values()))


def persistent_ids(pickles: Iterator[bytes] | list[bytes]) -> Iterator[tuple]:
    """Every persistent id (as a tuple of strings, ints and placeholders) in the pickles."""
    for data in pickles:
        yield from _persistent_ids(data)


def _persistent_ids(data: bytes) -> Iterator[tuple]:
    stack: list = []
    marks: list[int] = []
    memo: dict = {}
    for op, arg, _pos in pickletools.genops(data):
        name = op.name
        if name == "MARK":
            marks.append(len(stack))
        elif name in _STRINGS:
            stack.append(arg if isinstance(arg, str) else str(arg))
        elif name in ("BININT", "BININT1", "BININT2", "INT", "LONG", "LONG1", "LONG4"):
            stack.append(arg)
        elif name in ("GLOBAL",):
            stack.append(("global", arg))
        elif name == "STACK_GLOBAL":
            qualname, module_name = stack.pop(), stack.pop()
            stack.append(("global", f"{qualname} {module_name}"))
        elif name in _PUTS:
            memo[arg] = stack[-1] if stack else None
        elif name == "MEMOIZE":
            memo[len(memo)] = stack[-1] if stack else None
        elif name in _GETS:
            stack.append(memo.get(arg))
        elif name == "TUPLE":
            start = marks.pop()
            items = tuple(stack[start:])
            del stack[start:]
            stack.append(items)
        elif name in _TUPLE_N:
            count = _TUPLE_N[name]
            items = tuple(stack[-count:])
            del stack[-count:]
            stack.append(items)
        elif name == "EMPTY_TUPLE":
            stack.append(())
        elif name == "BINPERSID":
            pid = stack.pop()
            if isinstance(pid, tuple):
                yield pid
            stack.append(None)
        elif name == "STOP":
            return
        else:
            _generic(op, stack, marks)


def _generic(op: pickletools.OpcodeInfo, stack: list, marks: list[int]) -> None:
    """Apply an opcode's stack effect with placeholders (values we do not need)."""
    before = op.stack_before
    if pickletools.markobject in before:
        start = marks.pop()
        del stack[start:]
        below = before.index(pickletools.markobject)
        if below:
            del stack[-below:]
    elif before:
        del stack[-len(before):]
    stack.extend([None] * len(op.stack_after))
