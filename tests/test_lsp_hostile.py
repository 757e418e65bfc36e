"""Hostile messages to `torchlint server` (tests/lsp_hostile.py): every request it can read is
answered, it keeps serving, and a valid change afterwards still gets its diagnostics on
Python's lines. Plus the framing that lets it resynchronise after a broken frame."""

from __future__ import annotations

import io
import json

import pytest

pytest.importorskip("pygls")

from lsp_hostile import hostile_messages, hostile_session  # noqa: E402
from torchlint.lsp.framing import FramedStdin  # noqa: E402


def test_the_server_answers_hostile_messages_and_keeps_serving(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "w"\n')
    problems, sent = hostile_session(tmp_path)
    assert sent == len(hostile_messages("file:///x.py"))
    assert problems == []


def _frames(data: bytes) -> list[dict]:
    """Read `data` through FramedStdin as pygls does: headers to a blank line, then the body."""
    reader, out = FramedStdin(io.BytesIO(data)), []
    while True:
        length = None
        while True:
            line = reader.readline()
            if not line:
                return out
            if line.startswith(b"Content-Length: "):
                length = int(line.split(b":")[1])
            if not line.strip():
                break
        out.append(json.loads(reader.read(length)))


def _frame(body: bytes, header: bytes | None = None) -> bytes:
    return (header if header is not None else b"Content-Length: %d\r\n" % len(body)) + b"\r\n" + body


def test_a_frame_without_a_usable_length_is_dropped_and_the_next_one_read():
    good = [b'{"id": 1}', b'{"id": 2}', b'{"id": 3}']
    data = (
        _frame(good[0])
        + _frame(b"{}", b"Content-Length: abc\r\n")  # body glued to the next header line
        + _frame(good[1], b"Content-Type: \xff\xfe\r\ncontent-length:  9 \r\n")
        + _frame(b"garbage\r\nmore", b"\r\n")
        + b"\r\n" + _frame(good[2])
    )
    assert _frames(data) == [{"id": 1}, {"id": 2}, {"id": 3}]


def test_a_body_cut_short_ends_the_stream():
    assert _frames(_frame(b'{"id": 1}') + b"Content-Length: 50\r\n\r\n{}") == [{"id": 1}]
