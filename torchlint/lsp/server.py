"""`torchlint server`: the language server, on pygls.

Documents are checked from the editor's text on open and on change (see debounce.py for how
edits are coalesced), in one worker thread so that the protocol keeps being read while a file
is checked, and checks never overlap (an engine is not thread-safe). Every check re-runs the
project phase of each project with an open document, so an edit to `models.py` re-checks the
open `train.py` that imports it.

Settings (the client's `initializationOptions`): `debounceMs` (150), `isolated` (read no
configuration file, as `check --isolated`: a configuration's `plugins` imports code from the
workspace), `docsUrl` (a template such as `https://example.org/rules/{code}.html`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from torchlint import __version__
from torchlint.lsp import convert
from torchlint.lsp.debounce import Debouncer
from torchlint.lsp.documents import is_checked, is_config_file
from torchlint.lsp.linting import LintWorkspace, path_key
from torchlint.lsp.positions import LineIndex

if TYPE_CHECKING:
    from torchlint.findings import Finding

DEFAULT_DEBOUNCE_MS = 150
_WATCHED = ("**/pyproject.toml", "**/torchlint.toml", "**/.torchlint.toml", "**/*.py", "**/*.pyi")
log = logging.getLogger("torchlint.server")


@dataclass
class Checked:
    """What was last found in one open document, and for which of its texts."""

    version: int | None
    text: str
    findings: list[Finding] = field(default_factory=list)
    published: list[Any] | None = None


class TorchlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("torchlint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.lint: LintWorkspace | None = None
        self.docs_template: str | None = None
        self.checked: dict[str, Checked] = {}  # by URI
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="torchlint-check")
        self.debouncer = Debouncer(DEFAULT_DEBOUNCE_MS / 1000, self.check_open_documents)
        self._reported_problems: set[str] = set()

    # -- documents -----------------------------------------------------------------------
    def open_documents(self) -> dict[str, Any]:
        """The open documents torchlint checks, by URI."""
        return {
            uri: document
            for uri, document in self.workspace.text_documents.items()
            if uri.startswith("file:") and is_checked(Path(to_fs_path(uri) or uri))
        }

    def encoding(self) -> str:
        return str(self.workspace.position_encoding or "utf-16")

    def docs_uri(self, path: Path, code: str) -> str | None:
        from torchlint.lsp.ruledocs import docs_uri

        rule = self.lint.project_for(path).rules.get(code) if self.lint else None
        return docs_uri(rule, self.docs_template) if rule is not None else None

    async def run_in_worker(self, function, *args):
        return await asyncio.get_running_loop().run_in_executor(self.worker, function, *args)

    async def check_open_documents(self) -> None:
        """Check every open document from its current text and publish what changed."""
        if self.lint is None:
            return
        documents = self.open_documents()
        snapshot = {uri: (document.version, document.source) for uri, document in documents.items()}
        texts = {path_key(Path(to_fs_path(uri))): text for uri, (_, text) in snapshot.items()}
        started = time.perf_counter()
        try:
            found = await self.run_in_worker(self.lint.check, texts)
        except Exception as exc:  # a crash must not take the editor's server down
            log.exception("check failed")
            self.window_log_message(types.LogMessageParams(types.MessageType.Error, f"torchlint: check failed: {exc!r}"))
            return
        elapsed = time.perf_counter() - started
        # For an editor's server log (and benchmarks/lsp_latency.py): the checking's share of
        # the latency, the rest being the debounce window and the protocol. Sent before the
        # diagnostics, so a client has it when they arrive.
        self.window_log_message(
            types.LogMessageParams(types.MessageType.Log, f"torchlint: checked {len(snapshot)} open documents in {elapsed * 1000:.0f} ms")
        )
        self._report_config_problems()
        for uri, (version, text) in snapshot.items():
            findings = found.get(path_key(Path(to_fs_path(uri))), [])
            self.publish(uri, Checked(version, text, findings))

    def publish(self, uri: str, checked: Checked) -> None:
        path = Path(to_fs_path(uri))
        lines = LineIndex(checked.text, self.encoding())
        diagnostics = [convert.diagnostic(f, lines, lambda code: self.docs_uri(path, code)) for f in checked.findings]
        previous = self.checked.get(uri)
        checked.published = diagnostics
        self.checked[uri] = checked
        if previous is not None and previous.version == checked.version and previous.published == diagnostics:
            return  # nothing new to say about this document
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=checked.version, diagnostics=diagnostics)
        )

    def _report_config_problems(self) -> None:
        for project in self.lint.projects():
            if project.problem and project.problem not in self._reported_problems:
                self._reported_problems.add(project.problem)
                self.window_show_message(
                    types.ShowMessageParams(types.MessageType.Error, f"torchlint: {project.problem} (using the default settings)")
                )

    async def current(self, uri: str) -> Checked | None:
        """The findings for the document's current text, checking it now if they are stale
        (a code action or hover asked before the debounced check ran)."""
        document = self.workspace.text_documents.get(uri)
        if document is None:
            return None
        checked = self.checked.get(uri)
        if checked is None or checked.text != document.source:
            await self.check_open_documents()
            checked = self.checked.get(uri)
        return checked

    def reload_configuration(self) -> None:
        if self.lint is not None:
            self.lint.reload()
        self._reported_problems.clear()


server = TorchlintServer()


@server.feature(types.INITIALIZE)
def initialize(ls: TorchlintServer, params: types.InitializeParams) -> None:
    options = params.initialization_options if isinstance(params.initialization_options, dict) else {}
    folders = [Path(to_fs_path(folder.uri)) for folder in params.workspace_folders or []]
    if not folders and params.root_uri:
        folders = [Path(to_fs_path(params.root_uri))]
    ls.lint = LintWorkspace(folders, isolated=bool(options.get("isolated", False)))
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
    ls.debouncer.poke(now=True)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: TorchlintServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.debouncer.poke()


@server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
def did_save(ls: TorchlintServer, params: types.DidSaveTextDocumentParams) -> None:
    path = Path(to_fs_path(params.text_document.uri))
    if is_config_file(path):
        ls.reload_configuration()
    ls.debouncer.poke(now=True)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: TorchlintServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    if ls.checked.pop(uri, None) is not None:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
    ls.debouncer.poke(now=True)  # other documents now see the file's text on disk


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: TorchlintServer, params: types.DidChangeWatchedFilesParams) -> None:
    paths = [(Path(to_fs_path(change.uri)), change.type) for change in params.changes]
    if any(is_config_file(path) for path, _ in paths):
        ls.reload_configuration()
    elif ls.lint is not None and any(kind != types.FileChangeType.Changed for _, kind in paths):
        ls.lint.forget_files()
    ls.debouncer.poke(now=True)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=False),
)
async def code_action(ls: TorchlintServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    uri = params.text_document.uri
    checked = await ls.current(uri)
    if checked is None:
        return None
    path = Path(to_fs_path(uri))
    lines = LineIndex(checked.text, ls.encoding())
    return convert.code_actions(uri, checked.text, checked.findings, lines, params.range, lambda code: ls.docs_uri(path, code))


@server.feature(types.TEXT_DOCUMENT_HOVER)
async def hover(ls: TorchlintServer, params: types.HoverParams) -> types.Hover | None:
    uri = params.text_document.uri
    checked = await ls.current(uri)
    if checked is None or ls.lint is None:
        return None
    rules = ls.lint.project_for(Path(to_fs_path(uri))).rules
    return convert.hover(checked.findings, LineIndex(checked.text, ls.encoding()), params.position, rules)


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


def main() -> None:
    from torchlint.static.parallel import quieter_gc

    quieter_gc()  # each check builds a syntax tree of short-lived objects, as `check` does
    server.start_io()

