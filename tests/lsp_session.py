"""A `torchlint server` subprocess driven by pygls' own LSP client, every wait bounded.

Used by tests/test_server.py (benchmarks/lsp_latency.py speaks plain JSON-RPC, to drive ruff's
server with the same bytes).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any, Callable, Union

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.lsp.client import LanguageClient

#: Seconds any one answer or notification may take before the test fails.
TIMEOUT = 20.0

CAPABILITIES = types.ClientCapabilities(
    window=types.WindowClientCapabilities(show_document=types.ShowDocumentClientCapabilities(support=True)),
    workspace=types.WorkspaceClientCapabilities(
        did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True)
    ),
    text_document=types.TextDocumentClientCapabilities(
        publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True)
    ),
    notebook_document=types.NotebookDocumentClientCapabilities(synchronization=types.NotebookDocumentSyncClientCapabilities()),
)


def _converter():
    """lsprotocol's converter, except that a code action carrying a command object is read as
    a CodeAction: the stock union hook takes any object with a `command` key for a Command
    and turns the nested command into a string."""
    converter = get_converter()

    def command_or_action(data: dict, _: object):
        kind = types.Command if isinstance(data.get("command"), str) else types.CodeAction
        return converter.structure(data, kind)

    converter.register_structure_hook(Union[types.Command, types.CodeAction], command_or_action)
    return converter


class ServerSession:
    """One server process for one workspace folder."""

    def __init__(self, root: Path, options: dict[str, Any] | None = None, cwd: Path | None = None) -> None:
        self.root = root
        self.cwd = cwd or root
        self.options = options or {}
        self.client = LanguageClient("torchlint-tests", "0", converter_factory=_converter)
        self.published: list[types.PublishDiagnosticsParams] = []
        self.shown: list[str] = []
        self.registrations: list[types.Registration] = []
        self.messages: list[str] = []
        self._news = asyncio.Event()
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.published.append(params)
            self._news.set()

        @self.client.feature(types.WINDOW_SHOW_DOCUMENT)
        def show_document(params: types.ShowDocumentParams) -> types.ShowDocumentResult:
            self.shown.append(params.uri)
            self._news.set()
            return types.ShowDocumentResult(success=True)

        @self.client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register(params: types.RegistrationParams) -> None:
            self.registrations.extend(params.registrations)

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def log_message(params: types.LogMessageParams) -> None:
            pass

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)
        def show_message(params: types.ShowMessageParams) -> None:
            self.messages.append(params.message)

    async def start(self) -> types.InitializeResult:
        await self.client.start_io(sys.executable, "-m", "torchlint", "server", cwd=str(self.cwd))
        folder = types.WorkspaceFolder(uri=self.root.as_uri(), name=self.root.name)
        result = await self.bounded(
            self.client.initialize_async(
                types.InitializeParams(
                    capabilities=CAPABILITIES,
                    root_uri=self.root.as_uri(),
                    workspace_folders=[folder],
                    initialization_options=self.options,
                )
            )
        )
        self.client.initialized(types.InitializedParams())
        return result

    async def stop(self) -> int | None:
        """shutdown, exit; the exit status of the server process."""
        await self.bounded(self.client.shutdown_async(None))
        self.client.exit(None)
        server = self.client._server
        try:
            return await asyncio.wait_for(server.wait(), TIMEOUT)
        except asyncio.TimeoutError:
            server.kill()
            raise
        finally:
            await asyncio.wait_for(self.client.stop(), TIMEOUT)

    async def kill(self) -> None:
        server = self.client._server
        if server is not None and server.returncode is None:
            server.kill()
            await asyncio.wait_for(server.wait(), TIMEOUT)
        await asyncio.wait_for(self.client.stop(), TIMEOUT)

    @staticmethod
    async def bounded(awaitable):
        return await asyncio.wait_for(awaitable, TIMEOUT)

    # -- documents -----------------------------------------------------------------------
    def uri(self, name: str) -> str:
        return (self.root / name).as_uri()

    def open(self, name: str, text: str | None = None) -> str:
        uri = self.uri(name)
        text = (self.root / name).read_text() if text is None else text
        self.versions[uri], self.texts[uri] = 1, text
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
        )
        return uri

    def replace(self, name: str, text: str) -> int:
        """Send the new text as one incremental change over the whole old text."""
        uri = self.uri(name)
        old = self.texts[uri]
        lines = old.split("\n")
        end = types.Position(line=len(lines) - 1, character=len(lines[-1].encode("utf-16-le")) // 2)
        self.versions[uri] += 1
        self.texts[uri] = text
        change = types.TextDocumentContentChangePartial(range=types.Range(types.Position(0, 0), end), text=text)
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                content_changes=[change],
            )
        )
        return self.versions[uri]

    def close(self, name: str) -> None:
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(self.uri(name))))

    # -- notebooks (LSP 3.17 notebook sync, as VS Code sends it) ----------------------------
    def cell_uri(self, name: str, index: int) -> str:
        """A cell's document URI the way VS Code makes them (a fragment per cell, escaped)."""
        return f"vscode-notebook-cell:{(self.root / name).as_posix()}#W{index}sZmlsZQ%3D%3D"

    def open_notebook(self, name: str, cells: list[tuple[str, str]]) -> list[str]:
        """Open notebook `name` with `cells` ((kind "code" or "markdown", text), in order);
        the cells' URIs."""
        uris = [self.cell_uri(name, index) for index in range(len(cells))]
        kinds = {"code": types.NotebookCellKind.Code, "markdown": types.NotebookCellKind.Markup}
        self.versions[self.uri(name)] = 1
        for uri, (_, text) in zip(uris, cells):
            self.versions[uri], self.texts[uri] = 1, text
        self.client.notebook_document_did_open(
            types.DidOpenNotebookDocumentParams(
                notebook_document=types.NotebookDocument(
                    uri=self.uri(name),
                    notebook_type="jupyter-notebook",
                    version=1,
                    cells=[types.NotebookCell(kind=kinds[kind], document=uri) for uri, (kind, _) in zip(uris, cells)],
                ),
                cell_text_documents=[
                    types.TextDocumentItem(uri=uri, language_id="python" if kind == "code" else "markdown", version=1, text=text)
                    for uri, (kind, text) in zip(uris, cells)
                ],
            )
        )
        return uris

    def change_cell(self, name: str, cell: str, text: str) -> int:
        """Replace the whole text of one cell; the cell document's new version."""
        old = self.texts[cell]
        lines = old.split("\n")
        end = types.Position(line=len(lines) - 1, character=len(lines[-1].encode("utf-16-le")) // 2)
        notebook = self.uri(name)
        self.versions[notebook] += 1
        self.versions[cell] += 1
        self.texts[cell] = text
        change = types.TextDocumentContentChangePartial(range=types.Range(types.Position(0, 0), end), text=text)
        self.client.notebook_document_did_change(
            types.DidChangeNotebookDocumentParams(
                notebook_document=types.VersionedNotebookDocumentIdentifier(version=self.versions[notebook], uri=notebook),
                change=types.NotebookDocumentChangeEvent(
                    cells=types.NotebookDocumentCellChanges(
                        text_content=[
                            types.NotebookDocumentCellContentChanges(
                                document=types.VersionedTextDocumentIdentifier(uri=cell, version=self.versions[cell]),
                                changes=[change],
                            )
                        ]
                    )
                ),
            )
        )
        return self.versions[cell]

    def close_notebook(self, name: str, cells: list[str]) -> None:
        self.client.notebook_document_did_close(
            types.DidCloseNotebookDocumentParams(
                notebook_document=types.NotebookDocumentIdentifier(uri=self.uri(name)),
                cell_text_documents=[types.TextDocumentIdentifier(uri=uri) for uri in cells],
            )
        )

    async def diagnostics(self, name: str, where: Callable[[types.PublishDiagnosticsParams], bool] = lambda p: True, *, after: int = 0) -> types.PublishDiagnosticsParams:
        """The first diagnostics published for `name` (a file in the root, or a document's
        URI) from the `after`-th publication on that satisfy `where`."""
        uri = name if ":" in name else self.uri(name)
        deadline = time.monotonic() + TIMEOUT
        seen = after
        while True:
            for params in self.published[seen:]:
                if params.uri == uri and where(params):
                    return params
            seen = len(self.published)
            left = deadline - time.monotonic()
            if left <= 0:
                got = [(p.uri, p.version, [d.code for d in p.diagnostics]) for p in self.published]
                raise AssertionError(f"no matching diagnostics for {name} in {TIMEOUT} s; published: {got}")
            self._news.clear()
            try:
                await asyncio.wait_for(self._news.wait(), left)
            except asyncio.TimeoutError:
                pass

    async def latest(self, name: str, version: int | None = None) -> types.PublishDiagnosticsParams:
        """Diagnostics for the given version of `name` (its current one by default)."""
        uri = name if ":" in name else self.uri(name)
        wanted = self.versions[uri] if version is None else version
        return await self.diagnostics(name, lambda p: p.version == wanted)


def codes(params: types.PublishDiagnosticsParams) -> list[str]:
    return sorted(str(d.code) for d in params.diagnostics)


def apply_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP text edits (UTF-16 positions, all relative to `text`) as a client would."""
    lines = text.split("\n")

    def offset(position: types.Position) -> int:
        before = sum(len(line) + 1 for line in lines[: position.line])
        line = lines[position.line] if position.line < len(lines) else ""
        units = 0
        for index, char in enumerate(line):
            if units >= position.character:
                return before + index
            units += len(char.encode("utf-16-le")) // 2
        return before + len(line)

    spans = sorted(((offset(e.range.start), offset(e.range.end), e.new_text) for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text
