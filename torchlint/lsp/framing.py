"""stdin as well-formed LSP frames for pygls, resynchronising after a broken one.

pygls reads headers until a blank line and then `Content-Length` bytes. A header block
without a valid `Content-Length` (`Content-Length: abc`, a frame cut short) made it skip the
blank line and read the next body glued to the next header, and every message after it was
lost: the server stayed up but deaf. Here a frame is read whole first: header lines are
searched for `Content-Length: N` (also at the end of a line that starts with the garbage
of a broken frame), a block without one is dropped, and pygls gets each good frame again
with a clean header.
"""

from __future__ import annotations

import re
from typing import BinaryIO

_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*([0-9]{1,12})[ \t]*\r?\n?$", re.IGNORECASE)
#: A body larger than this is read and dropped, not held (a client sends far less).
MAX_BODY = 256 * 1024 * 1024


class FramedStdin:
    """The `readline()`/`read(n)` pygls' reader calls, served from whole frames."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.pending = b""

    def readline(self) -> bytes:
        if not self.pending:
            self.pending = self._next_frame()
        line, newline, rest = self.pending.partition(b"\n")
        self.pending = rest
        return line + newline

    def read(self, size: int = -1) -> bytes:
        data, self.pending = (self.pending, b"") if size < 0 else (self.pending[:size], self.pending[size:])
        return data

    def _next_frame(self) -> bytes:
        """The next frame with a usable length, as `Content-Length: N\\r\\n\\r\\n<body>`; b"" at the end."""
        length = None
        while True:
            line = self.raw.readline()
            if not line:
                return b""
            if line.strip() == b"":
                if length is None:
                    continue  # a header block without a length: nothing to read, resynchronise
                if length > MAX_BODY:
                    self._skip(length)
                    length = None
                    continue
                body = self.raw.read(length)
                if len(body) < length:
                    return b""  # the stream ended inside the body
                return b"Content-Length: %d\r\n\r\n" % length + body
            match = _LENGTH.search(line)
            if match is not None:
                length = int(match.group(1))

    def _skip(self, length: int) -> None:
        while length > 0:
            chunk = self.raw.read(min(length, 1 << 20))
            if not chunk:
                return
            length -= len(chunk)


def answering_protocol():
    """pygls' LanguageServerProtocol, except that a request whose params do not fit the
    method's types (`"line": "a"`, a character past 2**31, params that are a list) gets a
    JSON-RPC error response. pygls reported it in a popup and never answered the request,
    so the client waited for that id forever."""
    from pygls.exceptions import JsonRpcException
    from pygls.protocol import LanguageServerProtocol

    class AnsweringProtocol(LanguageServerProtocol):
        def structure_message(self, data):
            try:
                return super().structure_message(data)
            except JsonRpcException as exc:
                msg_id = data.get("id")
                if "method" in data and isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool):
                    self._send_response(msg_id, error=exc.to_response_error())
                raise

    return AnsweringProtocol
