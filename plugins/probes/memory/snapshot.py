"""Live CUDA allocations by the user line that made them, from a memory snapshot.

``torch.cuda.memory._snapshot()`` lists the caching allocator's segments and their blocks;
when allocation history is recorded (``_record_memory_history``), each block carries the
Python stack that allocated it, innermost frame first. The first frame of the user's code
on that stack is the line charged with the block. Plain data in, plain data out (no torch):
tested on synthetic snapshots.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

ACTIVE = "active_allocated"


def summarize_snapshot(snapshot: dict[str, Any], is_user: Callable[[str], bool], top: int = 10) -> dict[str, Any]:
    """``allocated`` (bytes in active blocks), ``reserved`` (segments), ``unattributed`` (active
    bytes with no user frame on their stack), ``lines``: the ``top`` user lines by active
    bytes, each ``{path, line, function, bytes, blocks}``; ``failed``: the size of the last
    allocation the allocator could not serve, when the trace recorded it."""
    by_line: Counter = Counter()
    blocks: Counter = Counter()
    functions: dict[tuple[str, int], str] = {}
    allocated = reserved = unattributed = 0
    for segment in snapshot.get("segments") or ():
        reserved += int(segment.get("total_size") or 0)
        for block in segment.get("blocks") or ():
            if block.get("state") != ACTIVE:
                continue
            size = int(block.get("size") or 0)
            allocated += size
            frame = _user_frame(_frames(block), is_user)
            if frame is None:
                unattributed += size
                continue
            key = (str(frame.get("filename")), int(frame.get("line") or 0))
            by_line[key] += size
            blocks[key] += 1
            functions.setdefault(key, str(frame.get("name") or ""))
    failed = None
    for trace in snapshot.get("device_traces") or ():
        for entry in trace or ():
            if entry.get("action") == "oom":
                failed = int(entry.get("size") or 0)
    return {
        "allocated": allocated,
        "reserved": reserved,
        "unattributed": unattributed,
        "failed": failed,
        "lines": [
            {"path": path, "line": line, "function": functions[(path, line)], "bytes": size, "blocks": blocks[(path, line)]}
            for (path, line), size in by_line.most_common(top)
        ],
    }


def _frames(block: dict[str, Any]) -> list[dict[str, Any]]:
    """A block's allocation stack: ``frames`` (torch 2.1 on), or the last ``history`` entry's."""
    frames = block.get("frames")
    if frames:
        return list(frames)
    history = block.get("history") or ()
    for entry in reversed(list(history)):
        if entry.get("frames"):
            return list(entry["frames"])
    return []


def _user_frame(frames: list[dict[str, Any]], is_user: Callable[[str], bool]) -> dict[str, Any] | None:
    for frame in frames:
        filename = frame.get("filename")
        if filename and is_user(str(filename)):
            return frame
    return None
