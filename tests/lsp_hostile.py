"""Hostile messages to `torchlint server`, over raw stdio: malformed JSON, wrong types, huge
and negative positions, unknown methods, edits of documents never opened, headers that are
not UTF-8 or not numbers. The server must answer every request it can read (a result or
an error), stay up, and still publish diagnostics for a valid document afterwards.

Shared by tests/test_lsp_hostile.py and benchmarks/reliability.py; every wait is bounded.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

TIMEOUT = 20.0
DOC = "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n\x0c\nx = torch.ger(y, y)\n"


def frame(body: bytes, headers: bytes | None = None) -> bytes:
    return (headers if headers is not None else b"Content-Length: %d\r\n" % len(body)) + b"\r\n" + body


def message(payload: Any) -> bytes:
    return frame(json.dumps(payload).encode())


def hostile_messages(uri: str) -> list[tuple[str, bytes, int | None]]:
    """(what, bytes to send, id of the request that must be answered or None)."""
    huge = {"line": 10**9, "character": 10**12}
    rng = {"start": {"line": -1, "character": -5}, "end": huge}
    doc = {"textDocument": {"uri": uri}}
    out: list[tuple[str, bytes, int | None]] = [
        ("malformed JSON", frame(b'{"jsonrpc": "2.0", "id": 100, "method": '), None),
        ("JSON that is not an object", message([1, 2, 3]), None),
        ("JSON null", message(None), None),
        ("a header that is not UTF-8", frame(b'{"jsonrpc":"2.0","method":"$/x"}', b"Content-Length: 32\r\nContent-Type: \xff\xfe\x80\r\n"), None),
        ("a Content-Length that is not a number", frame(b"{}", b"Content-Length: abc\r\n"), None),
        ("an unknown request", message({"jsonrpc": "2.0", "id": 101, "method": "torchlint/nothing", "params": {}}), 101),
        ("an unknown notification", message({"jsonrpc": "2.0", "method": "$/unknown", "params": {}}), None),
        ("a method that is a number", message({"jsonrpc": "2.0", "id": 102, "method": 5}), None),
        ("hover with string positions", message({"jsonrpc": "2.0", "id": 103, "method": "textDocument/hover",
                                                 "params": {**doc, "position": {"line": "a", "character": None}}}), 103),
        ("hover far past the end", message({"jsonrpc": "2.0", "id": 104, "method": "textDocument/hover",
                                            "params": {**doc, "position": huge}}), 104),
        ("code actions over a huge, negative range", message({"jsonrpc": "2.0", "id": 105, "method": "textDocument/codeAction",
                                                              "params": {**doc, "range": rng, "context": {"diagnostics": []}}}), 105),
        ("didOpen whose document is a number", message({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": 5}}), None),
        ("didChange of a document never opened", message({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri + ".unopened.py", "version": 3},
            "contentChanges": [{"range": rng, "text": "x"}]}}), None),
        ("didClose of a document never opened", message({"jsonrpc": "2.0", "method": "textDocument/didClose",
                                                         "params": {"textDocument": {"uri": "file:///nowhere/x.py"}}}), None),
        ("params that are a list", message({"jsonrpc": "2.0", "id": 106, "method": "textDocument/hover", "params": [1, 2]}), 106),
        ("hover at the largest valid position", message({"jsonrpc": "2.0", "id": 108, "method": "textDocument/hover",
                                                         "params": {**doc, "position": {"line": 2**31 - 1, "character": 2**31 - 1}}}), 108),
        ("code actions over a range that ends before it starts", message({"jsonrpc": "2.0", "id": 109, "method": "textDocument/codeAction",
            "params": {**doc, "range": {"start": {"line": 2, "character": 9}, "end": {"line": 0, "character": 0}},
                       "context": {"diagnostics": []}}}), 109),
        ("didChange of the open document far past its end", message({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": {"start": {"line": 10**6, "character": 0}, "end": {"line": 10**6 + 1, "character": 0}}, "text": "x"}]}}), None),
        ("didChange whose version is a string", message({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": "three"}, "contentChanges": []}}), None),
        ("a body that is not UTF-8", frame(b'{"jsonrpc": "2.0", "id": 110, "method": "textDocument/hover", "params": "\xff\xfe"}'), None),
        ("an id that is an object", message({"jsonrpc": "2.0", "id": {"a": 1}, "method": "shutdown"}), None),
        ("a command with arguments of the wrong types", message({"jsonrpc": "2.0", "id": 111, "method": "workspace/executeCommand",
                                                                  "params": {"command": "torchlint.openDocs", "arguments": [5, None, {"x": []}]}}), 111),
        ("a response to a request never sent", message({"jsonrpc": "2.0", "id": 9999, "result": {"x": 1}}), None),
        ("cancelling a request that does not exist", message({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 4242}}), None),
        ("a uri that is no uri", message({"jsonrpc": "2.0", "id": 107, "method": "textDocument/hover",
                                          "params": {"textDocument": {"uri": "\x00::\ud800"}, "position": {"line": 0, "character": 0}}}), 107),
    ]
    return out


class RawServer:
    """`torchlint server` on pipes; a thread reads its frames into a queue."""

    def __init__(self, root: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "torchlint", "server"], cwd=root, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.inbox: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.inbox.put(None)
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii", "replace").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            self.inbox.put(json.loads(stream.read(length or 0)))

    def send(self, data: bytes) -> None:
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def request(self, id_: int, method: str, params: Any) -> None:
        self.send(message({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}))

    def wait_for(self, wanted, seen: list) -> dict | None:
        """The first message `wanted(message)` accepts; everything read goes into `seen`."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            try:
                got = self.inbox.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                break
            if got is None:
                return None
            seen.append(got)
            if isinstance(got, dict) and "method" in got and "id" in got:  # a request of the server's: accept it
                self.send(message({"jsonrpc": "2.0", "id": got["id"], "result": None}))
            if wanted(got):
                return got
        return None

    def close(self) -> int | None:
        if self.process.poll() is None:
            self.process.kill()  # our own child, by its handle
        try:
            return self.process.wait(timeout=TIMEOUT)
        finally:
            for stream in (self.process.stdin, self.process.stdout):
                try:
                    stream.close()
                except OSError:
                    pass


def _published(server: RawServer, uri: str, code: str, line: int, seen: list, when: str) -> list[str]:
    """[] when a diagnostic `code` is published for `uri` on 0-based `line`, else the problem."""
    def wanted(m) -> bool:
        return isinstance(m, dict) and m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri \
            and any(d.get("code") == code for d in m["params"]["diagnostics"])

    published = server.wait_for(wanted, seen)
    if published is None:
        return [f"no {code} diagnostic {when}"]
    lines = sorted(d["range"]["start"]["line"] for d in published["params"]["diagnostics"] if d.get("code") == code)
    return [] if lines == [line] else [f"{code} published on line(s) {lines}, not {line} (0-based) {when}"]


def hostile_session(root: Path) -> tuple[list[str], int]:
    """Run the hostile messages against a server for `root`; (problems, messages sent)."""
    (root / "m.py").write_text(DOC)
    uri = (root / "m.py").as_uri()
    server = RawServer(root)
    problems: list[str] = []
    seen: list = []
    sent = 0
    try:
        server.request(1, "initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {},
                                         "workspaceFolders": [{"uri": root.as_uri(), "name": "w"}]})
        if server.wait_for(lambda m: m.get("id") == 1, seen) is None:
            return ["no answer to initialize"], sent
        server.send(message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        server.send(message({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": DOC}}}))
        problems += _published(server, uri, "TL502", 2, seen, "before the hostile messages")
        for what, data, id_ in hostile_messages(uri):
            server.send(data)
            sent += 1
            if id_ is not None:
                answer = server.wait_for(lambda m, i=id_: isinstance(m, dict) and m.get("id") == i and "method" not in m, seen)
                if answer is None:
                    problems.append(f"{what}: no answer (server {'exited' if server.process.poll() is not None else 'silent'})")
                    if server.process.poll() is not None:
                        return problems, sent
            # a cheap request after each message: the server is still serving
            probe = 1000 + sent
            server.request(probe, "workspace/executeCommand", {"command": "torchlint.nothing", "arguments": []})
            if server.wait_for(lambda m, i=probe: isinstance(m, dict) and m.get("id") == i, seen) is None:
                problems.append(f"{what}: the server stopped answering")
                return problems, sent
        # A whole-text change after them: the server still checks, on Python's lines.
        server.send(message({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 50}, "contentChanges": [{"text": DOC + "z = torch.cuda.amp.GradScaler()\n"}]}}))
        problems += _published(server, uri, "TL504", 3, seen, "after the hostile messages")
        server.request(2, "shutdown", None)
        if server.wait_for(lambda m: isinstance(m, dict) and m.get("id") == 2, seen) is None:
            problems.append("no answer to shutdown")
        server.send(message({"jsonrpc": "2.0", "method": "exit"}))
        try:
            code = server.process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            problems.append("the server did not exit after shutdown and exit")
        else:
            if code != 0:
                problems.append(f"the server exited with {code} after shutdown and exit")
    finally:
        server.close()
    return problems, sent
