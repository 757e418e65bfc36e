"""Where each code cell's `source` sits in the notebook file's raw JSON text.

Writing fixes back replaces only those spans, so every other byte of the file (outputs,
metadata, execution counts, indentation, key order, escaping, the final newline) stays as it
was. The same spans turn a cell position into a line and column of the file, for formats
whose consumers open the raw file (SARIF, GitHub and GitLab annotations).

Only the path `cells[i].source` is walked by hand; every other value is skipped by the json
module's own (C) scanner, so a notebook with megabytes of outputs costs little.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from json.decoder import scanstring

_WHITESPACE = " \t\n\r"


class SpanError(ValueError):
    """The text is not the JSON the notebook was read from."""


@dataclass
class SourceSpan:
    start: int  # offset of the value's first character (`[` or `"`)
    end: int  # offset just past it
    #: (start, end) of each string: the quoted JSON strings the source is made of
    strings: list[tuple[int, int]] = field(default_factory=list)
    is_list: bool = True


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WHITESPACE:
        index += 1
    return index


def _expect(text: str, index: int, char: str) -> int:
    index = _skip(text, index)
    if index >= len(text) or text[index] != char:
        raise SpanError(f"expected {char!r} at offset {index}")
    return index + 1


def _members(text: str, index: int):
    """Yield (key, value offset) for each member of the object at `index`; the caller must
    send back the offset just past the value."""
    index = _expect(text, index, "{")
    index = _skip(text, index)
    if text.startswith("}", index):
        return index + 1
    while True:
        index = _expect(text, index, '"')
        key, index = scanstring(text, index)
        index = _skip(text, _expect(text, index, ":"))
        index = yield key, index
        index = _skip(text, index)
        if text.startswith(",", index):
            index += 1
            continue
        return _expect(text, index, "}")


def _walk_object(text: str, index: int, visit) -> int:
    """Walk the object at `index`; `visit(key, offset)` returns the offset past that value."""
    members = _members(text, index)
    try:
        key, offset = next(members)
        while True:
            key, offset = members.send(visit(key, offset))
    except StopIteration as stop:
        return stop.value


def source_spans(text: str) -> dict[int, SourceSpan]:
    """{cell index: span of its `source`} for every cell that has one."""
    decoder = json.JSONDecoder()
    spans: dict[int, SourceSpan] = {}

    def skip_value(offset: int) -> int:
        return decoder.raw_decode(text, offset)[1]

    def cell_member(position: int):
        def visit(key: str, offset: int) -> int:
            if key != "source":
                return skip_value(offset)
            span = _source_value(text, offset)
            spans[position] = span
            return span.end

        return visit

    def top_member(key: str, offset: int) -> int:
        if key != "cells":
            return skip_value(offset)
        index = _expect(text, offset, "[")
        index = _skip(text, index)
        if text.startswith("]", index):
            return index + 1
        position = 0
        while True:
            index = _walk_object(text, _skip(text, index), cell_member(position))
            position += 1
            index = _skip(text, index)
            if text.startswith(",", index):
                index += 1
                continue
            return _expect(text, index, "]")

    _walk_object(text, _skip(text, 0), top_member)
    return spans


def _source_value(text: str, offset: int) -> SourceSpan:
    if text.startswith('"', offset):
        _, end = scanstring(text, offset + 1)
        return SourceSpan(offset, end, [(offset, end)], is_list=False)
    index = _expect(text, offset, "[")
    span = SourceSpan(offset, offset)
    index = _skip(text, index)
    if text.startswith("]", index):
        span.end = index + 1
        return span
    while True:
        index = _skip(text, index)
        start = _expect(text, index, '"') - 1
        _, index = scanstring(text, start + 1)
        span.strings.append((start, index))
        index = _skip(text, index)
        if text.startswith(",", index):
            index += 1
            continue
        span.end = _expect(text, index, "]")
        return span


def encode_source(text: str, new_source: str, span: SourceSpan, ensure_ascii: bool) -> str:
    """The JSON for `new_source` laid out like the value at `span`: one string, or a list of
    lines with the original's spacing around and between its items."""
    if not span.is_list:
        return json.dumps(new_source, ensure_ascii=ensure_ascii)
    items = [json.dumps(line, ensure_ascii=ensure_ascii) for line in _jupyter_lines(new_source)]
    if not span.strings:
        return "[" + ", ".join(items) + "]"
    lead = text[span.start + 1 : span.strings[0][0]]
    tail = text[span.strings[-1][1] : span.end - 1]
    between = text[span.strings[0][1] : span.strings[1][0]] if len(span.strings) > 1 else "," + lead
    return "[" + lead + between.join(items) + tail + "]"


def _jupyter_lines(source: str) -> list[str]:
    """The list Jupyter stores: each line with its `\\n`, the last without one."""
    lines = source.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def raw_offset(text: str, span: SourceSpan, offset: int) -> int:
    """The offset in the raw file of character `offset` of the decoded source."""
    for start, end in span.strings:
        value, _ = scanstring(text, start + 1)
        if offset < len(value) or (start, end) == span.strings[-1]:
            return _escaped_index(text, start + 1, min(offset, len(value)))
        offset -= len(value)
    return span.start


def _escaped_index(text: str, index: int, count: int) -> int:
    """Walk `count` decoded characters of the JSON string body starting at `index`."""
    for _ in range(count):
        if text[index] != "\\":
            index += 1
        elif text[index + 1] != "u":
            index += 2
        elif 0xD800 <= int(text[index + 2 : index + 6], 16) < 0xDC00 and text.startswith("\\u", index + 6):
            index += 12  # a surrogate pair is one character once decoded
        else:
            index += 6
    return index
