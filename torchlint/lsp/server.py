"""`torchlint server`: the language server, on pygls.

Documents are checked from the editor's text on open and on change (see debounce.py for how
edits are coalesced), in one worker thread so that the protocol keeps being read while a file
is checked, and checks never overlap (an engine is not thread-safe). A change that arrives
during a check abandons it (torchlint.static.interrupt): its diagnostics would be out of
date, and the check of the new text starts as soon as it stops. Every check re-runs the
project phase of each project with an open document, so an edit to `models.py` re-checks the
open `train.py` that imports it.

Notebooks: with a client that synchronizes notebooks (LSP 3.17 notebook document sync), the
cells of a Jupyter notebook are checked together as `torchlint check` checks the saved
notebook, and each cell's document gets its own diagnostics, fixes and hovers. A client
without it can open the `.ipynb` file as text: findings are then shown on the cell's line in
the JSON (see views.py).

Settings (the client's `initializationOptions`): `debounceMs` (0: with checks abandoned when
the text changes, waiting for typing to pause only adds latency), `isolated` (read no
configuration file, as `check --isolated`: a configuration's `plugins` imports code from the
workspace), `docsUrl` (a template such as `https://example.org/rules/{code}.html`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from torchlint import __version__
from torchlint.lsp import convert
from torchlint.lsp.collector import BetweenChecks
from torchlint.lsp.debounce import Debouncer
from torchlint.lsp.documents import PYTHON_CELL_LANGUAGES, SyncedCell, is_checked, is_config_file, is_notebook, notebook_json
from torchlint.lsp.framing import answering_protocol
from torchlint.lsp.linting import LintWorkspace, ProjectCheck, path_key
from torchlint.lsp.views import CellView, NotebookFileView, PythonView, View
from torchlint.static.interrupt import CheckInterrupted

DEFAULT_DEBOUNCE_MS = 0
_WATCHED = ("**/pyproject.toml", "**/torchlint.toml", "**/.torchlint.toml", "**/*.py", "**/*.pyi", "**/*.ipynb")
#: Jupyter notebooks, their Python cells: what the client is asked to synchronize.
NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage(language="python")], notebook="jupyter-notebook")
    ],
    save=True,
)
log = logging.getLogger("torchlint.server")


@dataclass
class _Unit:
    """One checked file of a check: what is checked of it, and what to publish for it."""

    path: Path
    text: str  # the file's text in the editor; for a synchronized notebook, its cells as JSON
    document: Any = None  # the open text document (a .py, or a .ipynb opened as JSON)
    cells: list[SyncedCell] | None = None  # a synchronized notebook's cells, in order

    @property
    def key(self) -> str:
        return path_key(self.path)


class TorchlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "torchlint",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=NOTEBOOK_SYNC,
            protocol_cls=answering_protocol(),
        )
        self.lint: LintWorkspace | None = None
        self.docs_template: str | None = None
        self.checked: dict[str, View] = {}  # by unquote(URI)
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="torchlint-check")
        self.debouncer = Debouncer(DEFAULT_DEBOUNCE_MS / 1000, self.check_open_documents)
        self._reported_problems: set[str] = set()
        #: Bumped by every change to what is open; a check records the value it saw, so a
        #: code action or hover knows whether the findings it would use are current.
        self.changes = 0
        self._checked_at = -1
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop checks are started from
        self.collector = BetweenChecks()

    # -- documents -----------------------------------------------------------------------
    def changed(self) -> None:
        self.changes += 1

    def _text_document(self, uri: str):
        return self.workspace.text_documents.get(unquote(uri))

    def open_documents(self) -> dict[str, Any]:
        """The open text documents torchlint checks (not notebook cells), by URI."""
        return {
            uri: document
            for uri, document in self.workspace.text_documents.items()
            if uri.startswith("file:")
            and self.workspace.get_notebook_document(cell_uri=uri) is None
            and is_checked(Path(to_fs_path(uri) or uri))
        }

    def open_notebooks(self) -> dict[str, Any]:
        """The open notebooks (with a file: path: their project is found from it), by URI."""
        return {uri: notebook for uri, notebook in self.workspace.notebook_documents.items() if uri.startswith("file:")}

    def encoding(self) -> str:
        return str(self.workspace.position_encoding or "utf-16")

    def docs_uri(self, path: Path, code: str) -> str | None:
        from torchlint.lsp.ruledocs import docs_uri

        rule = self.lint.project_for(path).rules.get(code) if self.lint else None
        return docs_uri(rule, self.docs_template) if rule is not None else None

    async def run_in_worker(self, function, *args):
        return await asyncio.get_running_loop().run_in_executor(self.worker, function, *args)

    def _units(self) -> list[_Unit]:
        """What the open documents and notebooks are now, to check and publish."""
        units = [_Unit(Path(to_fs_path(uri)), document.source, document=document) for uri, document in self.open_documents().items()]
        for uri, notebook in self.open_notebooks().items():
            cells = []
            for cell in notebook.cells:
                document = self._text_document(cell.document)
                if document is None:
                    continue
                python = cell.kind == types.NotebookCellKind.Code and (document.language_id or "python") in PYTHON_CELL_LANGUAGES
                cells.append(SyncedCell(cell.document, document.version, document.source, python))
            units.append(_Unit(Path(to_fs_path(uri)), notebook_json(cells), cells=cells))
        return units

    def _views(self, unit: _Unit, found: ProjectCheck) -> list[View]:
        """The documents to publish for `unit`: the file's own, or one per notebook cell."""
        findings, notebook = found.findings.get(unit.key, []), found.notebooks.get(unit.key)
        encoding = self.encoding()
        if unit.cells is None:
            document = unit.document
            if is_notebook(unit.path) and notebook is not None:  # its JSON (else shown as a script)
                return [NotebookFileView(document.uri, document.version, unit.text, unit.path, findings, encoding, notebook=notebook)]
            return [PythonView(document.uri, document.version, unit.text, unit.path, findings, encoding)]
        views = [
            CellView(cell.uri, cell.version, cell.text, unit.path, [], encoding, notebook=notebook, number=number, cells=unit.cells)
            for number, cell in enumerate(unit.cells, start=1)
        ]
        for finding in findings if views else ():
            # Cell N of the check is the client's N-th cell; a finding without a cell (the
            # engine's own, on a notebook with no code) goes on the first rather than nowhere.
            number = finding.cell if finding.cell is not None and 1 <= finding.cell <= len(views) else 1
            views[number - 1].findings.append(finding)
        return views

    def project_completed(self) -> None:
        """From a warm-up's thread: a project's files all have results now (lsp/warmup.py);
        check the open documents again with all their project's facts."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self.check_open_documents()))

    async def check_open_documents(self, *, interruptible: bool = True) -> None:
        """Check every open document from its current text and publish what changed.

        `interruptible`: a change that arrives during the check abandons it (its diagnostics
        would be out of date before they were published); the debouncer then runs the next
        check at once, for the new text."""
        if self.lint is None:
            return
        self._loop = asyncio.get_running_loop()
        seen = self.changes
        units = self._units()
        texts = {unit.key: unit.text for unit in units}
        started = time.perf_counter()

        def interrupt() -> None:
            if self.changes != seen:  # read from the worker thread: an int, set by the event loop
                raise CheckInterrupted

        try:
            found = await self.run_in_worker(self.lint.check, texts, interrupt if interruptible else None)
        except CheckInterrupted:
            return
        except Exception as exc:  # a crash must not take the editor's server down
            log.exception("check failed")
            self.window_log_message(types.LogMessageParams(types.MessageType.Error, f"torchlint: check failed: {exc!r}"))
            return
        elapsed = time.perf_counter() - started
        # For an editor's server log (and benchmarks/lsp_latency.py): the checking's share of
        # the latency, the rest being the debounce window and the protocol. Sent before the
        # diagnostics, so a client has it when they arrive.
        self.window_log_message(
            types.LogMessageParams(types.MessageType.Log, f"torchlint: checked {len(units)} open documents in {elapsed * 1000:.0f} ms")
        )
        self._report_config_problems()
        for unit in units:
            for view in self._views(unit, found):
                if self._text_document(view.uri) is not None:  # not closed while it was checked
                    self.publish(view)
        self._checked_at = max(self._checked_at, seen)
        # In the worker, so that it runs between two checks and never inside one.
        await self.run_in_worker(self.collector.after_check)

    def publish(self, view: View) -> None:
        diagnostics = [convert.diagnostic(f, view, lambda code: self.docs_uri(view.path, code)) for f in view.findings]
        key = unquote(view.uri)
        previous = self.checked.get(key)
        view.published = diagnostics
        self.checked[key] = view
        if previous is not None and previous.version == view.version and previous.published == diagnostics:
            return  # nothing new to say about this document
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=view.uri, version=view.version, diagnostics=diagnostics)
        )

    def forget(self, uri: str) -> None:
        """A document closed (or a cell was deleted): clear what was published for it."""
        view = self.checked.pop(unquote(uri), None)
        if view is not None and view.published:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=view.uri, diagnostics=[]))

    def _report_config_problems(self) -> None:
        for project in self.lint.projects():
            if project.problem and project.problem not in self._reported_problems:
                self._reported_problems.add(project.problem)
                self.window_show_message(
                    types.ShowMessageParams(types.MessageType.Error, f"torchlint: {project.problem} (using the default settings)")
                )

    async def current(self, uri: str) -> View | None:
        """What was found in the document's current text, checking now if anything changed
        since the last check (a code action or hover asked before the debounced check ran;
        in a notebook, an edit of another cell can change this one's findings)."""
        if self._text_document(uri) is None:
            return None
        view = self.checked.get(unquote(uri))
        if view is None or self._checked_at < self.changes:
            await self.check_open_documents(interruptible=False)  # the answer needs this text's findings
            view = self.checked.get(unquote(uri))
        return view

    def reload_configuration(self) -> None:
        if self.lint is not None:
            self.lint.reload()
        self._reported_problems.clear()
        self.changed()


server = TorchlintServer()


@server.feature(types.INITIALIZE)
def initialize(ls: TorchlintServer, params: types.InitializeParams) -> None:
    options = params.initialization_options if isinstance(params.initialization_options, dict) else {}
    folders = [Path(to_fs_path(folder.uri)) for folder in params.workspace_folders or []]
    if not folders and params.root_uri:
        folders = [Path(to_fs_path(params.root_uri))]
    ls.lint = LintWorkspace(folders, isolated=bool(options.get("isolated", False)), warm_up=True)
    ls.lint.on_project_complete = ls.project_completed
    ls.docs_template = options.get("docsUrl") or None
    delay = options.get("debounceMs", DEFAULT_DEBOUNCE_MS)
    if isinstance(delay, (int, float)) and delay >= 0:
        ls.debouncer.delay = delay / 1000


@server.feature(types.INITIALIZED)
async def initialized(ls: TorchlintServer, params: types.InitializedParams) -> None:
    """Ask to hear of configuration files and Python files changing on disk (created,
    deleted, edited by another program), where the client lets a server ask."""
    watched = ls.client_capabilities.workspace and ls.client_capabilities.workspace.did_change_watched_files
    if not (watched and watched.dynamic_registration):
        return
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern=pattern) for pattern in _WATCHED]
    )
    registration = types.Registration(id="torchlint-watch", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options)
    try:
        await ls.client_register_capability_async(types.RegistrationParams(registrations=[registration]))
    except Exception:  # the client refused: saves of open files still reload
        log.info("the client did not accept file watching")


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: TorchlintServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.changed()
    ls.debouncer.poke(now=True)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: TorchlintServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.changed()
    ls.debouncer.poke()


@server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
def did_save(ls: TorchlintServer, params: types.DidSaveTextDocumentParams) -> None:
    path = Path(to_fs_path(params.text_document.uri))
    if is_config_file(path):
        ls.reload_configuration()
    ls.debouncer.poke(now=True)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: TorchlintServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.changed()
    ls.forget(params.text_document.uri)
    ls.debouncer.poke(now=True)  # other documents now see the file's text on disk


@server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
def notebook_did_open(ls: TorchlintServer, params: types.DidOpenNotebookDocumentParams) -> None:
    ls.changed()
    ls.debouncer.poke(now=True)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def notebook_did_change(ls: TorchlintServer, params: types.DidChangeNotebookDocumentParams) -> None:
    ls.changed()
    structure = params.change.cells.structure if params.change.cells else None
    for cell in (structure.did_close or []) if structure else []:
        ls.forget(cell.uri)  # a deleted cell
    ls.debouncer.poke()


@server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
def notebook_did_save(ls: TorchlintServer, params: types.DidSaveNotebookDocumentParams) -> None:
    ls.debouncer.poke(now=True)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
def notebook_did_close(ls: TorchlintServer, params: types.DidCloseNotebookDocumentParams) -> None:
    ls.changed()
    for cell in params.cell_text_documents:
        ls.forget(cell.uri)
    ls.debouncer.poke(now=True)


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: TorchlintServer, params: types.DidChangeWatchedFilesParams) -> None:
    paths = [(Path(to_fs_path(change.uri)), change.type) for change in params.changes]
    if any(is_config_file(path) for path, _ in paths):
        ls.reload_configuration()
    elif ls.lint is not None and any(kind != types.FileChangeType.Changed for _, kind in paths):
        ls.lint.forget_files()
    ls.changed()  # files not open are read from disk
    ls.debouncer.poke(now=True)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=False),
)
async def code_action(ls: TorchlintServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    view = await ls.current(params.text_document.uri)
    if view is None:
        return None
    return convert.code_actions(view, params.range, lambda code: ls.docs_uri(view.path, code))


@server.feature(types.TEXT_DOCUMENT_HOVER)
async def hover(ls: TorchlintServer, params: types.HoverParams) -> types.Hover | None:
    view = await ls.current(params.text_document.uri)
    if view is None or ls.lint is None:
        return None
    return convert.hover(view, params.position, ls.lint.project_for(view.path).rules)


@server.command(convert.OPEN_DOCS_COMMAND)
async def open_docs(ls: TorchlintServer, *arguments: Any) -> str | None:
    """Show a rule's documentation: in the editor where the client can show a document,
    else as a message naming where it is."""
    code = str(arguments[0]) if arguments else ""
    # The document the action was for names the project whose rules (plugins) apply.
    if len(arguments) > 1 and str(arguments[1]).startswith("file:"):
        path = Path(to_fs_path(str(arguments[1])))
    else:
        path = (ls.lint.folders[0] if ls.lint and ls.lint.folders else Path.cwd()) / "_.py"
    uri = ls.docs_uri(path, code)
    if uri is None:
        return None
    window = ls.client_capabilities.window
    if window and window.show_document and window.show_document.support:
        await ls.window_show_document_async(types.ShowDocumentParams(uri=uri, external=not uri.startswith("file:")))
    else:
        ls.window_show_message(types.ShowMessageParams(types.MessageType.Info, f"{code}: {uri}"))
    return uri


@server.feature(types.SHUTDOWN)
def shutdown(ls: TorchlintServer, *args: Any) -> None:
    ls.worker.shutdown(wait=False, cancel_futures=True)
    if ls.lint is not None:
        ls.lint.stop()


def main() -> None:
    import sys

    from torchlint.lsp.framing import FramedStdin
    from torchlint.static.parallel import quieter_gc

    quieter_gc()  # each check builds a syntax tree of short-lived objects, as `check` does
    server.start_io(FramedStdin(sys.stdin.buffer))  # a broken frame must not leave it deaf

