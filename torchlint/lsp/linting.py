"""The server's checking, without the protocol: each project's engine, and each file's last
result kept between edits so that a keystroke re-checks one file plus the project phase.

A project is what `torchlint check` run in its root would see: the folder of the nearest
configuration file (else the file's project folder, else the editor's workspace folder), its files discovered with the
configured excludes and .gitignore. Open documents are checked from the editor's text; every
other file from disk, through the same on-disk cache `check` fills (`.torchlint_cache/`), so
the cross-file facts of `models.py` reach `train.py` whether or not `models.py` is open, and a
second session starts warm. The server's first check of a cold project does not wait for every
file: see `lsp/warmup.py`.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from torchlint.config import ConfigError, find_config_file
from torchlint.lsp.documents import document_source, is_checked, is_notebook
from torchlint.pluginmanager import PluginError

if TYPE_CHECKING:
    from torchlint.findings import Finding
    from torchlint.lsp.last_good import GoodCells
    from torchlint.lsp.warmup import ProjectWarmup
    from torchlint.notebook import Notebook
    from torchlint.static.chunks import ChunkParser
    from torchlint.rule import Rule
    from torchlint.static.discover import Discovered
    from torchlint.static.engine import FileResult


def _key(path: Path) -> str:
    return os.path.normpath(os.path.abspath(path))


def _stamp(path: Path | None) -> tuple[int, int] | None:
    """When a file last changed, as far as a stat tells (None: no such file)."""
    if path is None:
        return None
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size


@dataclass
class _Remembered:
    """A file's last result and what it was computed from."""

    stamp: object  # (mtime_ns, size) for a file read from disk, the text for an open document
    result: FileResult
    data: bytes  # the Python source checked (a notebook's joined code cells)
    notebook: Notebook | None = None


@dataclass
class ProjectCheck:
    """Findings of the open documents, by _key(path); a notebook's findings are in cell
    coordinates (`Finding.cell`, line in the cell), its fixes in the joined code of
    `notebooks[key]`."""

    findings: dict[str, list[Finding]] = field(default_factory=dict)
    notebooks: dict[str, Notebook] = field(default_factory=dict)


class Project:
    """One configuration: its rules, its files, and each file's last result."""

    def __init__(self, root: Path, config_file: Path | None, *, isolated: bool = False, warm_up: bool = False) -> None:
        from torchlint.session import open_session
        from torchlint.static.engine import StaticEngine

        self.root = root
        #: The configuration file as it was read: a later check that finds it changed builds
        #: the project again, whether or not the editor reported the change.
        self.config_stamp = _stamp(config_file)
        #: Why the configuration could not be used (the defaults are used instead), or None.
        self.problem: str | None = None
        try:
            session = open_session(config_file, root, root, isolated=isolated)
            enabled = session.enabled()
            engine = StaticEngine(session.config, session.pm, session.rules, enabled)
        except (ConfigError, PluginError) as exc:
            self.problem = str(exc)
            session = open_session(None, root, root, isolated=True)
            enabled = session.enabled()
            engine = StaticEngine(session.config, session.pm, session.rules, enabled)
        self.config = session.config
        self.config_file = session.config.config_file
        self.rules: dict[str, type[Rule]] = session.rules
        self.engine = engine
        self._cache = session.cache(enabled)
        self._files: list[Discovered] | None = None
        self._remembered: dict[str, _Remembered] = {}
        #: Each open document's chunked parser: an edit re-parses only the statements it
        #: touched (torchlint/static/chunks.py). Dropped when the document closes.
        self._parsers: dict[str, ChunkParser] = {}
        #: Each open document's last text that parsed, and its result (lsp/last_good.py).
        self._last_good: dict[str, tuple[str, FileResult]] = {}
        #: Each open notebook's code cells as they last all parsed (lsp/last_good.py).
        self._good_cells: dict[str, GoodCells] = {}
        #: Whether a result of every project file is to hand (remembered, or in the cache).
        #: Until then a check reads the open documents, what they import and what is cached,
        #: while a `torchlint check` of the project fills the cache (lsp/warmup.py); without a
        #: usable cache (or without `warm_up`: a caller that wants the whole answer at once)
        #: it checks every file itself.
        self.complete = not (warm_up and self._cache.usable)
        self.isolated = isolated
        self.warmup: ProjectWarmup | None = None
        #: Called (from the warm-up's thread) when the project became complete.
        self.on_complete: Callable[[], None] | None = None

    def display(self, path: Path) -> str:
        """The path as `torchlint check` run in the root shows it (messages name files so)."""
        try:
            return Path(_key(path)).relative_to(self.root).as_posix()
        except ValueError:
            return Path(_key(path)).as_posix()

    def forget_files(self) -> None:
        """Files were created or deleted: discover again before the next check."""
        self._files = None

    def _discovered(self) -> list[Discovered]:
        if self._files is None:
            from torchlint.static.discover import discover

            self._files = [item for item in discover([self.root], self.config, cwd=self.root) if is_checked(item.path)]
        return self._files

    def wants(self, path: Path) -> bool:
        """Whether an open document at `path` is checked: not excluded by the configuration
        (an open file need not be discovered yet: it may never have been saved), and for a
        notebook, notebooks included (`include = ["*.py"]` leaves them out, as in `check`)."""
        from torchlint.static.discover import is_excluded, is_included

        if not is_checked(path) or (is_notebook(path) and not is_included(Path(_key(path)), self.config)):
            return False
        return not is_excluded(Path(_key(path)), self.config, self.root)

    def check(self, documents: dict[str, str], interrupt: Callable[[], None] | None = None) -> ProjectCheck:
        """Check the project with `documents` (by _key(path): editor text, a notebook's
        JSON) in place of their files on disk; return the findings of those documents.
        `interrupt` raises to abandon the check (torchlint.static.interrupt): it is called
        between files and, within a file, as the rules run."""
        from torchlint.static.discover import Discovered

        items = list(self._discovered())
        known = {_key(item.path) for item in items}
        for key in sorted(documents):
            if key not in known:
                items.append(Discovered(Path(key), self.display(Path(key))))
        for key in [key for key in self._parsers if key not in documents]:
            del self._parsers[key]
        for key in [key for key in self._last_good if key not in documents]:
            del self._last_good[key]
        for key in [key for key in self._good_cells if key not in documents]:
            del self._good_cells[key]
        results, contents, notebooks, open_notebooks = [], {}, {}, {}
        imported: set[str] | None = None
        deferred = 0
        for item in items:
            if interrupt is not None:
                interrupt()
            key = _key(item.path)
            if key in documents:
                remembered = self._open_result(item.display, key, documents[key], interrupt)
            else:
                cached_only = False
                if not self.complete:
                    if imported is None:
                        imported = self._imported_by(documents)
                    cached_only = key not in imported
                remembered = self._disk_result(item, cached_only=cached_only)
                if remembered is _DEFERRED:
                    deferred += 1
                    continue
            if remembered is None:
                continue
            results.append(remembered.result)
            contents[item.display] = remembered.data
            if remembered.notebook is not None:
                notebooks[item.display] = remembered.notebook
                if key in documents:
                    open_notebooks[key] = remembered.notebook
        if deferred:
            self._start_warmup()
            items = [item for item in items if item.display in contents or _key(item.path) in documents]
        elif not self.complete:
            self.complete = True  # every file was to hand: nothing to warm
        if interrupt is not None:
            interrupt()
        checked = self.engine.finish_results(items, results, contents, notebooks)
        by_display = {item.display: _key(item.path) for item in items if _key(item.path) in documents}
        out = ProjectCheck({key: [] for key in documents}, open_notebooks)
        for finding in checked.findings:
            key = by_display.get(finding.path)
            if key is not None:
                out.findings[key].append(finding)
        return out

    def _open_result(self, display: str, key: str, text: str, interrupt: Callable[[], None] | None = None) -> _Remembered | None:
        remembered = self._remembered.get(key)
        if remembered is not None and remembered.stamp == text:
            return remembered
        source = document_source(Path(key), text)
        if source is None:
            return None
        if source.text is None:  # a notebook whose JSON cannot be read (yet: being typed?)
            remembered = self._remembered[key] = _Remembered(text, _not_checked(display, source), b"")
            return remembered
        from torchlint.static.chunks import ChunkParser

        from torchlint.lsp import last_good

        parser = self._parsers.get(key)
        if parser is None:
            parser = self._parsers[key] = ChunkParser()
        notebook = source.notebook
        stand_in = None
        if notebook is not None and notebook.broken and key in self._good_cells:
            stand_in = last_good.with_good_cells(notebook, self._good_cells[key])
        if stand_in is not None:
            # A cell does not parse (being typed): its last good text stands in for it.
            stood, swapped = stand_in
            checked = self.engine.check_text(display, stood.text, parser=parser, interrupt=interrupt)
            result = last_good.cells_carried_over(checked, stood.notebook, notebook, swapped)
            source = stood
        else:
            result = _with_broken_cells(self.engine.check_text(display, source.text, parser=parser, interrupt=interrupt), notebook)
        if notebook is None:
            if not last_good.is_syntax_failure(result):
                self._last_good[key] = (source.text, result)
            elif key in self._last_good:
                good_text, good = self._last_good[key]
                result = last_good.carried_over(good_text, good, source.text, result)
        elif not notebook.broken:
            self._good_cells[key] = last_good.good_cells(notebook)
        remembered = _Remembered(text, result, source.text.encode("utf-8", "surrogatepass"), source.notebook)
        self._remembered[key] = remembered
        return remembered

    def _imported_by(self, documents: dict[str, str]) -> set[str]:
        """The project files the open documents import, at any depth (read with `ast` from
        disk): the facts a first check cannot do without."""
        from torchlint.static.import_closure import import_closure

        found: set[str] = set()
        for key in documents:
            if not is_notebook(Path(key)):
                found.update(_key(path) for path in import_closure(Path(key), [self.root]))
        return found

    def _start_warmup(self) -> None:
        if self.warmup is not None:
            return
        from torchlint.lsp.warmup import ProjectWarmup

        def done(succeeded: bool) -> None:
            # Succeeded or not: from now on the files still without a result are checked here.
            self.complete = True
            if self.on_complete is not None:
                self.on_complete()

        self.warmup = ProjectWarmup(self.root, isolated=self.isolated, done=done)

    def _disk_result(self, item: Discovered, *, cached_only: bool = False) -> _Remembered | object | None:
        """A file's result from disk: remembered, cached, or checked now (`cached_only`: not
        checked now; `_DEFERRED` instead)."""
        from torchlint.static.cache import entry_key
        from torchlint.static.engine import FileResult
        from torchlint.static.engine_rules import FileNotChecked, engine_finding
        from torchlint.static.source import decode_notebook, read_bytes

        key = _key(item.path)
        stamp = _stamp(Path(key))
        remembered = self._remembered.get(key)
        if remembered is not None and stamp is not None and remembered.stamp == stamp:
            return remembered
        data, problem = (None, item.problem) if item.problem else read_bytes(item.path)
        if data is None:
            result = FileResult(item.display, [engine_finding(FileNotChecked, item.display, f"cannot check: {problem}")])
            return _Remembered(stamp, result, b"")
        notebook = None
        if is_notebook(item.path):
            # As `check` reads a notebook: its joined code is what is checked and cached (an
            # edit of the outputs alone is a cache hit), under the key `check` uses.
            source = decode_notebook(data)
            if source.text is None:
                return _Remembered(stamp, _not_checked(item.display, source), b"")
            notebook, data = source.notebook, source.text.encode("utf-8")
        digest = entry_key(item.display, data, notebook=notebook is not None)
        result = None
        cached = self._cache.get(digest)
        if cached is not None:
            try:
                result = FileResult.from_json(item.display, cached)
            except Exception:
                result = None  # a damaged entry is a miss, as in `check`
        if result is None:
            if cached_only:
                return _DEFERRED
            result = self.engine.check_text(item.display, data.decode("utf-8")) if notebook is not None else self.engine.check_bytes(item.display, data)
            self._cache.put(digest, result.to_json())
        remembered = self._remembered[key] = _Remembered(stamp, _with_broken_cells(result, notebook), data, notebook)
        return remembered


#: `_disk_result`'s answer for a file it was asked not to check now.
_DEFERRED = object()


def _not_checked(display: str, source) -> FileResult:
    from torchlint.static.engine import FileResult
    from torchlint.static.engine_rules import FileNotChecked, engine_finding

    return FileResult(display, [engine_finding(FileNotChecked, display, f"cannot check: {source.problem}", source.line, source.column)])


def _with_broken_cells(result: FileResult, notebook: Notebook | None) -> FileResult:
    """A notebook's cells that are not Python are left out of its code: one TL000 each, as
    `check` reports them (added to a copy: the result itself is what is cached)."""
    if notebook is None or not notebook.broken:
        return result
    from dataclasses import replace

    from torchlint.notebook.cells import broken_cell_findings

    return replace(result, findings=[*result.findings, *broken_cell_findings(result.path, notebook)])


class LintWorkspace:
    """Every project the open documents belong to, found and built on first use."""

    def __init__(self, folders: list[Path], *, isolated: bool = False, warm_up: bool = False) -> None:
        """`warm_up`: a project's first check answers from the open documents, what they
        import and the cache, and reads the rest in the background (lsp/warmup.py): the
        language server's way to its first diagnostics."""
        self.folders = [Path(_key(folder)) for folder in folders]
        self.isolated = isolated
        self.warm_up = warm_up
        self._projects: dict[tuple[str, str | None], Project] = {}
        #: The configuration file of each folder holding a document, looked up once per
        #: configuration (the lookup reads every pyproject.toml up the tree).
        self._config_files: dict[Path, Path | None] = {}
        # Checks run in the server's worker thread, hovers and reloads in its event loop.
        self._lock = threading.RLock()
        #: Called from a warm-up's thread when a project's files all have results: the
        #: server checks the open documents again (lsp/warmup.py).
        self.on_project_complete: Callable[[], None] | None = None

    def _config_file(self, path: Path) -> Path | None:
        if self.isolated:
            return None
        folder = path.parent
        if folder not in self._config_files:
            self._config_files[folder] = find_config_file(path)
        return self._config_files[folder]

    def project_for(self, path: Path) -> Project:
        with self._lock:
            return self._project_for(Path(_key(path)))

    def _project_for(self, path: Path) -> Project:
        config_file = self._config_file(path)
        if config_file is not None:
            root = config_file.parent.resolve()
        else:
            # No configuration: the file's project (the nearest folder holding a pyproject.toml,
            # .git, ...), whose other files `check` reads for a file given alone, so the editor
            # and the command line agree; outside any project, the workspace folder holding it.
            from torchlint.static.roots import RootFinder

            marked = RootFinder().of(path)
            if marked:
                root = Path(marked)
            else:
                holding = [folder for folder in self.folders if folder == path or folder in path.parents]
                root = max(holding, key=lambda folder: len(folder.parts)) if holding else path.parent
        key = (str(root), str(config_file) if config_file else None)
        project = self._projects.get(key)
        if project is None or project.config_stamp != _stamp(config_file):
            project = self._projects[key] = Project(root, config_file, isolated=self.isolated, warm_up=self.warm_up)
            project.on_complete = lambda: self.on_project_complete and self.on_project_complete()
        return project

    def check(self, documents: dict[str, str], interrupt: Callable[[], None] | None = None) -> ProjectCheck:
        """Findings of each document (by _key(path): its editor text), each project once;
        `interrupt` as for Project.check."""
        grouped: dict[int, tuple[Project, dict[str, str]]] = {}
        for key, text in documents.items():
            project = self.project_for(Path(key))
            if project.wants(Path(key)):
                grouped.setdefault(id(project), (project, {}))[1][key] = text
        found = ProjectCheck({key: [] for key in documents})
        for project, texts in grouped.values():
            checked = project.check(texts, interrupt)
            found.findings.update(checked.findings)
            found.notebooks.update(checked.notebooks)
        return found

    def projects(self) -> list[Project]:
        with self._lock:
            return list(self._projects.values())

    def reload(self) -> None:
        """A configuration file changed (or appeared): find and build every project again on
        next use."""
        with self._lock:
            self._projects.clear()
            self._config_files.clear()

    def forget_files(self) -> None:
        for project in self.projects():
            project.forget_files()

    def stop(self) -> None:
        """The server is shutting down: no warm-up outlives it."""
        for project in self.projects():
            if project.warmup is not None:
                project.warmup.stop()


def path_key(path: Path) -> str:
    """The key documents are passed by."""
    return _key(path)
