#!/usr/bin/env python3
"""How long after a change `torchlint server` publishes diagnostics for a 1,000-line file.

Drives the server over stdio with pygls' own LSP client, the way an editor does: opens a
synthetic training module (about 1,000 lines, a few findings, as a file being worked on
has), then sends one-line edits and times each from sending `textDocument/didChange` to
receiving the `publishDiagnostics` for that version.

  isolated  an edit after a pause (longer than the debounce window), as after a thought
  burst     five edits 30 ms apart (typing); timed from the last one: debounce + check
            (a check started by the first edit runs to its end first)
  check     the server's own time per check (its log messages): the rest is waiting
            (debounce) and the protocol

Usage:
  python3 benchmarks/lsp_latency.py [--lines 1000] [--edits 30] [--heavy]

`--heavy` puts two findings in every function (about 70 in the file) instead of a handful:
every reported finding costs a position lookup, so it shows the cost of a noisy file.
Target (issue 15): isolated edits within 300 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

TIMEOUT = 60.0

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


def synthetic(lines: int, heavy: bool) -> str:
    """A module of small models and training loops; every twelfth function buggy (all of
    them with `heavy`)."""
    parts, index = [HEAD], 0
    while sum(part.count("\n") for part in parts) < lines:
        buggy = heavy or index % 12 == 5
        parts.append(BLOCK.format(i=index, **(BUGGY if buggy else CLEAN)))
        index += 1
    return "".join(parts)


class Timer:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.client = LanguageClient("lsp-latency", "0")
        self.arrived: dict[int, float] = {}
        self.counts: dict[int, int] = {}
        self.news = asyncio.Event()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: types.PublishDiagnosticsParams) -> None:
            if params.version is not None:
                self.arrived.setdefault(params.version, time.perf_counter())
                self.counts[params.version] = len(params.diagnostics)
                self.news.set()

        #: The server's own account of each check's duration (its log messages), in seconds.
        self.check_times: list[float] = []

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def logged(params: types.LogMessageParams) -> None:
            match = re.search(r"checked \d+ open documents in (\d+) ms", params.message)
            if match:
                self.check_times.append(int(match.group(1)) / 1000)

        for method in (types.WINDOW_SHOW_MESSAGE, types.CLIENT_REGISTER_CAPABILITY):
            self.client.feature(method)(lambda params: None)

    async def wait_for(self, version: int) -> float:
        deadline = time.perf_counter() + TIMEOUT
        while version not in self.arrived:
            self.news.clear()
            await asyncio.wait_for(self.news.wait(), max(deadline - time.perf_counter(), 0.001))
        return self.arrived[version]


async def measure(lines: int, edits: int, heavy: bool, debounce_ms: int | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "pyproject.toml").write_text('[project]\nname = "bench"\n')
        text = synthetic(lines, heavy)
        (root / "bench.py").write_text(text)
        uri = (root / "bench.py").as_uri()
        timer = Timer(root)
        await timer.client.start_io(sys.executable, "-m", "torchlint", "server", cwd=folder)
        options = {} if debounce_ms is None else {"debounceMs": debounce_ms}
        await asyncio.wait_for(
            timer.client.initialize_async(
                types.InitializeParams(
                    capabilities=types.ClientCapabilities(),
                    root_uri=root.as_uri(),
                    workspace_folders=[types.WorkspaceFolder(root.as_uri(), "bench")],
                    initialization_options=options,
                )
            ),
            TIMEOUT,
        )
        timer.client.initialized(types.InitializedParams())
        started = time.perf_counter()
        version = 1
        timer.client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", version, text)))
        opened = await timer.wait_for(version) - started
        print(f"file: {text.count(chr(10))} lines, {timer.counts[1]} findings; first diagnostics after open: {opened * 1000:.0f} ms")

        target_line = text.split("\n").index("    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)")

        rate = "0.1"

        def edit() -> float:
            """Give the learning rate on one line a value it never had (a text the server
            has not checked before); return when the change was sent."""
            nonlocal version, rate
            version += 1
            old, new = rate, f"0.{version}"
            rate = new
            column = len("    optimizer = torch.optim.SGD(model.parameters(), lr=")
            change = types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(target_line, column), types.Position(target_line, column + len(old))), text=new
            )
            sent = time.perf_counter()
            timer.client.text_document_did_change(
                types.DidChangeTextDocumentParams(types.VersionedTextDocumentIdentifier(version=version, uri=uri), [change])
            )
            return sent

        checks_before = len(timer.check_times)
        isolated = []
        for step in range(edits):
            await asyncio.sleep(0.4)  # a pause longer than the debounce window
            sent = edit()
            isolated.append(await timer.wait_for(version) - sent)
        checks = timer.check_times[checks_before:]
        burst = []
        for round_ in range(max(edits // 5, 3)):
            await asyncio.sleep(0.4)
            for step in range(5):
                sent = edit()
                if step < 4:
                    await asyncio.sleep(0.03)
            burst.append(await timer.wait_for(version) - sent)
        await asyncio.wait_for(timer.client.shutdown_async(None), TIMEOUT)
        timer.client.exit(None)
        await asyncio.wait_for(timer.client.stop(), TIMEOUT)
    print(f"load average at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    for name, samples in (("isolated", isolated), ("burst", burst), ("check", checks)):
        ordered = sorted(samples)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        print(
            f"{name:<9} edits={len(samples):<3} median {statistics.median(samples) * 1000:6.0f} ms   "
            f"p95 {p95 * 1000:6.0f} ms   max {ordered[-1] * 1000:6.0f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--heavy", action="store_true", help="two findings in every function")
    parser.add_argument("--debounce-ms", type=int, default=None, help="the server's debounce window (default: its own, 150 ms)")
    args = parser.parse_args()
    asyncio.run(measure(args.lines, args.edits, args.heavy, args.debounce_ms))


if __name__ == "__main__":
    main()
