#!/usr/bin/env python3
"""Editor latency of `torchlint server`, next to ruff's server on the same files in the same run.

Drives each server over stdio in plain JSON-RPC, as an editor does, through one
scripted session, and times each change from sending `textDocument/didChange` to receiving
the `publishDiagnostics` for that version:

  open      a 3,000-line training module (a few findings, as a file being worked on has):
            from `didOpen` to its first diagnostics
  isolated  a one-word edit after a pause longer than the debounce window
  typed     a new line typed a key at a time (80 ms apart), timed from the last key to the
            diagnostics of that version: what one waits for after typing a line
  burst     five edits 30 ms apart, timed from the last one
  project   a 100-file project, cold (no cache): from starting the server to the
            diagnostics of the one file opened, whose finding needs a fact of another file
            (softmax in `models.py` fed to CrossEntropyLoss in `train.py`); for torchlint
            also to its second check, once the rest of the project is read (lsp/warmup.py)

torchlint's rows also give the server's own time per check (its log messages): the rest is
debounce and protocol. Both servers run one after the other for each scenario, so they share
the machine's state.

Usage:
  python3 benchmarks/lsp_latency.py [--lines 3000] [--edits 30] [--files 100] [--ruff PATH]

ruff is looked up on PATH or given with `--ruff` (a benchmark-only tool, `pip install ruff`);
without it its rows are left out, and the output says so. Targets (issue 27), on a quiet
machine: isolated and typed edits of the 3,000-line file within 300 ms at p95; the 100-file
project's first diagnostics within 3 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path


TIMEOUT = 60.0
KEY_INTERVAL_S = 0.08  # a steady typist: about 12 keys a second
PAUSE_S = 0.4  # a pause between edits: longer than any check under way needs to finish

BLOCK = '''

class Net{i}(nn.Module):
    def __init__(self, n_in: int = 32, n_out: int = 10):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_in, 64), nn.ReLU())
        self.head = nn.Linear(64, n_out)

    def forward(self, x):
        h = self.body(x)
        return self.head(h)


def train_{i}(loader, epochs: int = 1, device: str = "cpu"):
    model = Net{i}().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(epochs):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            out = model(x)
            loss = criterion({scores}, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    state = torch.load("net_{i}.pt"{load_args})
    model.load_state_dict(state)
    return model
'''
HEAD = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n"
BUGGY = {"scores": "F.softmax(out, dim=1)", "load_args": ""}  # TL101 and TL302
CLEAN = {"scores": "out", "load_args": ', map_location="cpu", weights_only=True'}
EDITED_LINE = "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)"
TYPED_LINE = "    print(loss.item(), step)"

PROJECT_MODELS = '''import torch.nn.functional as F
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        return F.softmax(self.fc(x), dim=1)
'''
PROJECT_TRAIN = '''import torch
from torch import nn

from proj.models import Classifier


def train(loader):
    model = Classifier()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
'''


def synthetic(lines: int, heavy: bool = False) -> str:
    """A module of small models and training loops; every twelfth function buggy (all of
    them with `heavy`)."""
    parts, index = [HEAD], 0
    while sum(part.count("\n") for part in parts) < lines:
        buggy = heavy or index % 12 == 5
        parts.append(BLOCK.format(i=index, **(BUGGY if buggy else CLEAN)))
        index += 1
    return "".join(parts)


def write_project(root: Path, files: int) -> Path:
    """`files` Python files in package `proj/`: the two of the cross-file finding and
    synthetic modules of about 150 lines. Returns the file the editor opens."""
    package = root / "proj"
    package.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "bench"\n')
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text(PROJECT_MODELS)
    (package / "train.py").write_text(PROJECT_TRAIN)
    for number in range(files - 3):
        (package / f"module_{number}.py").write_text(synthetic(150))
    return package / "train.py"


@dataclass
class Server:
    name: str
    command: list[str]


@dataclass
class Samples:
    """One server's timings, in seconds, by scenario."""
    rows: dict[str, list[float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, scenario: str, seconds: float) -> None:
        self.rows.setdefault(scenario, []).append(seconds)


class Session:
    """One server started over stdio, spoken to in plain JSON-RPC (both servers get the same
    bytes; no client library's types stand between), recording when each version's
    diagnostics arrive (diagnostics without a version count for the latest version sent)."""

    def __init__(self, server: Server, root: Path) -> None:
        self.server, self.root = server, root
        self.arrived: dict[tuple[str, int], float] = {}
        self.counts: dict[tuple[str, int], int] = {}
        self.sent: dict[str, int] = {}
        self.news = asyncio.Event()
        self.check_times: list[float] = []
        self.checks_logged_at: list[float] = []
        self.replies: dict[int, asyncio.Future] = {}
        self.next_id = 0

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            *self.server.command, cwd=str(self.root), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        self.reader = asyncio.ensure_future(self._read())
        await self.request("initialize", {
            "processId": os.getpid(), "rootUri": self.root.as_uri(), "capabilities": {},
            "workspaceFolders": [{"uri": self.root.as_uri(), "name": "bench"}]})
        self.notify("initialized", {})

    async def stop(self) -> None:
        await self.request("shutdown", None)
        self.notify("exit", None)
        try:
            await asyncio.wait_for(self.process.wait(), TIMEOUT)
        finally:
            self.reader.cancel()

    def _send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    def notify(self, method: str, params: object) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: object) -> object:
        self.next_id += 1
        reply = self.replies[self.next_id] = asyncio.get_running_loop().create_future()
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return await asyncio.wait_for(reply, TIMEOUT)

    async def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = 0
            while (header := await stream.readline()) not in (b"\r\n", b""):
                if header.lower().startswith(b"content-length:"):
                    length = int(header.split(b":")[1])
            if not header:
                return
            self._received(json.loads(await stream.readexactly(length)))

    def _received(self, message: dict) -> None:
        method = message.get("method")
        if method is None:  # a reply to us
            future = self.replies.pop(message.get("id"), None)
            if future is not None and not future.done():
                future.set_result(message.get("result"))
        elif "id" in message:  # the server asks (configuration, registrations): nothing to add
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif method == "textDocument/publishDiagnostics":
            params = message["params"]
            version = params.get("version", self.sent.get(params["uri"]))
            if version is not None:
                self.arrived.setdefault((params["uri"], version), time.perf_counter())
                self.counts[(params["uri"], version)] = len(params["diagnostics"])
                self.news.set()
        elif method == "window/logMessage":
            match = re.search(r"checked \d+ open documents in (\d+) ms", message["params"]["message"])
            if match:
                self.check_times.append(int(match.group(1)) / 1000)
                self.checks_logged_at.append(time.perf_counter())
                self.news.set()

    def open(self, path: Path) -> float:
        uri = path.as_uri()
        self.sent[uri] = 1
        sent = time.perf_counter()
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                              "text": path.read_text()}})
        return sent

    def change(self, path: Path, start: tuple[int, int], end: tuple[int, int], text: str) -> float:
        """Replace the text from `start` to `end` (line, column) with `text`; return when
        the change was sent."""
        uri = path.as_uri()
        self.sent[uri] = version = self.sent[uri] + 1
        where = {"start": {"line": start[0], "character": start[1]}, "end": {"line": end[0], "character": end[1]}}
        sent = time.perf_counter()
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": [{"range": where, "text": text}]})
        return sent

    async def diagnostics(self, path: Path) -> float:
        """When the diagnostics of the latest version sent for `path` arrived."""
        key = (path.as_uri(), self.sent[path.as_uri()])
        deadline = time.perf_counter() + TIMEOUT
        while key not in self.arrived:
            self.news.clear()
            await asyncio.wait_for(self.news.wait(), max(deadline - time.perf_counter(), 0.001))
        return self.arrived[key]


async def edit_session(server: Server, lines: int, edits: int, samples: Samples) -> None:
    """The 3,000-line file: open, isolated edits, typed lines, bursts."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "pyproject.toml").write_text('[project]\nname = "bench"\n')
        path = root / "bench.py"
        text = synthetic(lines)
        path.write_text(text)
        session = Session(server, root)
        await session.start()
        sent = session.open(path)
        samples.add("open", await session.diagnostics(path) - sent)
        samples.notes.append(f"{text.count(chr(10))} lines, {session.counts[(path.as_uri(), 1)]} diagnostics")
        checks_before = len(session.check_times)

        line = text.split("\n").index(EDITED_LINE)
        column, rate = len(EDITED_LINE) - len("0.1)"), "0.1"
        for step in range(edits):
            await asyncio.sleep(PAUSE_S)
            new = f"0.{step + 2}"  # a text the server has not checked before
            sent = session.change(path, (line, column), (line, column + len(rate)), new)
            rate = new
            samples.add("isolated", await session.diagnostics(path) - sent)

        for round_ in range(max(edits // 6, 3)):
            await asyncio.sleep(PAUSE_S)
            typed_at = line + 1
            session.change(path, (typed_at, 0), (typed_at, 0), "\n")  # a new empty line below the edited one
            for key, character in enumerate(TYPED_LINE):
                await asyncio.sleep(KEY_INTERVAL_S)
                sent = session.change(path, (typed_at, key), (typed_at, key), character)
            samples.add("typed", await session.diagnostics(path) - sent)
            await asyncio.sleep(PAUSE_S)
            session.change(path, (typed_at, 0), (typed_at + 1, 0), "")  # and the line deleted again
            await session.diagnostics(path)

        for round_ in range(max(edits // 5, 3)):
            await asyncio.sleep(PAUSE_S)
            for step in range(5):
                new = f"0.{round_}{step}9"
                sent = session.change(path, (line, column), (line, column + len(rate)), new)
                rate = new
                if step < 4:
                    await asyncio.sleep(0.03)
            samples.add("burst", await session.diagnostics(path) - sent)
        for seconds in session.check_times[checks_before:]:
            samples.add("check (server's own)", seconds)
        await session.stop()


async def project_session(server: Server, files: int, samples: Samples) -> None:
    """Cold start on a project: server start to the opened file's diagnostics."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        path = write_project(root, files)
        # A fresh folder: its cache (`.torchlint_cache/` in the root) is empty, a cold start.
        started = time.perf_counter()
        session = Session(server, root)
        await session.start()
        opened = session.open(path)
        arrived = await session.diagnostics(path)
        samples.add("project: start to diagnostics", arrived - started)
        samples.add("project: open to diagnostics", arrived - opened)
        if session.checks_logged_at:  # torchlint: the check again once the whole project is read
            deadline = time.perf_counter() + 120
            while len(session.checks_logged_at) < 2 and time.perf_counter() < deadline:
                session.news.clear()
                try:
                    await asyncio.wait_for(session.news.wait(), deadline - time.perf_counter())
                except asyncio.TimeoutError:
                    break
            if len(session.checks_logged_at) >= 2:
                samples.add("project: start to all its facts", session.checks_logged_at[1] - started)
        samples.notes.append(f"project of {files} files: {session.counts[(path.as_uri(), 1)]} diagnostics on train.py")
        await session.stop()


def summary(name: str, samples: Samples) -> list[str]:
    rows = []
    for scenario, values in samples.rows.items():
        ordered = sorted(values)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        rows.append(f"  {name:<10} {scenario:<30} n={len(values):<3} median {statistics.median(values) * 1000:7.0f} ms"
                    f"   p95 {p95 * 1000:7.0f} ms")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=3000)
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--ruff", default=shutil.which("ruff"), help="the ruff executable (default: on PATH)")
    options = parser.parse_args()
    servers = [Server("torchlint", [sys.executable, "-m", "torchlint", "server"])]
    if options.ruff:
        servers.append(Server("ruff", [options.ruff, "server"]))
    else:
        print("ruff not found (pass --ruff PATH): torchlint's rows only")
    results = {server.name: Samples() for server in servers}
    for server in servers:
        asyncio.run(project_session(server, options.files, results[server.name]))
    for server in servers:
        asyncio.run(edit_session(server, options.lines, options.edits, results[server.name]))
    print(f"load average at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    for server in servers:
        print(f"{server.name}: {'; '.join(results[server.name].notes)}")
        print("\n".join(summary(server.name, results[server.name])))
    if "ruff" in results:
        print("ratio torchlint / ruff (median, p95):")
        ours, theirs = results["torchlint"].rows, results["ruff"].rows
        for scenario in ours:
            if scenario in theirs:
                a, b = sorted(ours[scenario]), sorted(theirs[scenario])
                pa, pb = (v[min(len(v) - 1, round(0.95 * (len(v) - 1)))] for v in (a, b))
                print(f"  {scenario:<30} {statistics.median(a) / statistics.median(b):6.1f}x  {pa / pb:6.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
