"""Check files: prefilter, parse once, one traversal for all rules, suppress, project phase.

libcst is imported only when a file passes the prefilter: a pre-commit run over files that
never mention a rule's trigger tokens does not pay libcst's ~0.2 s import.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from torchlint.config import Config
from torchlint.findings import Finding
from torchlint.selection import codes_for
from torchlint.static.discover import Discovered, discover
from torchlint.static.engine_rules import ALWAYS_REPORTED, ENGINE_RULES, FileNotChecked, UnusedSuppression, engine_finding
from torchlint.static.cache import Cache, entry_key
from torchlint.static.lines import python_lines
from torchlint.static.parallel import run_checks
from torchlint.static.roots import ProjectRoots, RootFinder
from torchlint.static.source import decode_file, decode_notebook, decode_source, read_bytes, read_source
from torchlint.static.suppress import parse_suppressions

if TYPE_CHECKING:
    from torchlint.notebook import Notebook
    from torchlint.static.chunks import ChunkParser
    from torchlint.static.context import ProjectContext
    from torchlint.static.frozen_tree import FrozenTree
    import pluggy

    from torchlint.rule import Rule


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    parsed: bool = False

    def to_json(self) -> dict[str, Any]:
        """Path-independent, so a cache entry serves any copy of the same content."""
        findings = []
        for finding in self.findings:
            data = finding.to_json()
            del data["filename"]
            findings.append(data)
        return {"findings": findings, "facts": self.facts, "parsed": self.parsed}

    @classmethod
    def from_json(cls, path: str, data: dict[str, Any]) -> FileResult:
        return cls(
            path,
            [Finding.from_json({**item, "filename": path}) for item in data["findings"]],
            data.get("facts") or {},
            bool(data.get("parsed")),
        )


@dataclass
class CheckResult:
    findings: list[Finding]
    files_checked: int = 0
    files_parsed: int = 0
    suppressed: int = 0
    enabled: frozenset[str] = frozenset()
    cache_hits: int = 0
    baseline_suppressed: int = 0
    fixed: int = 0
    checked_paths: set[str] = field(default_factory=set)
    #: Said on stderr, not findings: a project too big to read around the given files.
    warnings: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if self.findings else 0


_TORCHLINT_SELECTOR = re.compile(r"TL[0-9]*")


def _has_directive(data: bytes) -> bool:
    return b"noqa" in data or b"NOQA" in data or b"torchlint:" in data


def _rule_wants_file(rule: type[Rule], text: str, seen: dict[str, bool] | None = None) -> bool:
    """The prefilter: one of the rule's trigger tokens, and one of the packages it needs.
    `seen` remembers, for one text, which tokens it holds: rules share tokens ("torch",
    "loss", "softmax"), and each search scans the whole file."""
    if seen is None:
        seen = {}

    def holds(token: str) -> bool:
        found = seen.get(token)
        if found is None:
            found = seen[token] = token in text
        return found

    if rule.triggers and not any(holds(token) for token in rule.triggers):
        return False
    return not rule.imports or any(holds(package) for package in rule.imports)


def _lines(text: str) -> list[str]:
    """Python's lines (see torchlint.static.lines); an empty text has one empty line."""
    return python_lines(text) or [""]


def _position(text: str, line: int | None, column: int | None) -> tuple[int, int]:
    """A 1-based (line, column) inside `text`: CPython puts some errors one past the end."""
    lines = _lines(text)
    line = min(max(line or 1, 1), len(lines))
    return line, min(max(column or 1, 1), len(lines[line - 1]) + 1)


def _longest_line(text: str) -> int:
    lines = _lines(text)
    return max(range(len(lines)), key=lambda i: len(lines[i])) + 1


def _parse_with_python(text: str) -> tuple[Any, tuple[str, int, int] | None]:
    """CPython's own parse, a fifth of libcst's cost: (tree, None), or (None, (problem, line,
    column)). It raises cleanly where libcst's native parser would crash, and its tokenizer
    errors carry real positions."""
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences are not ours to report
            return ast.parse(text), None
    except SyntaxError as exc:
        return None, (f"syntax error: {exc.msg}", *_position(text, exc.lineno, exc.offset))
    except (RecursionError, MemoryError) as exc:
        # CPython gave up on the nesting (no position); the deepest code is on a long line.
        message = f"nesting too deep to check safely (Python's parser raised {type(exc).__name__})"
        return None, (message, _longest_line(text), 1)
    except ValueError as exc:
        return None, (f"could not parse: {exc}", 1, 1)


class TokenIndex:
    """Which checked files contain each project token, worked out the first time a rule asks
    (most runs have no finding whose rule asks, and a warm run must stay cheap)."""

    def __init__(self, contents: dict[str, bytes], patterns: dict[str, re.Pattern[bytes]], assumed: set[str]) -> None:
        self._contents = contents
        self._patterns = patterns
        self._assumed = assumed
        self._found: dict[str, frozenset[str]] = {}
        self._named: dict[str, frozenset[str]] = {}

    def get(self, token: str, default: frozenset[str] = frozenset()) -> frozenset[str]:
        found = self._found.get(token)
        if found is None:
            pattern = self._patterns.get(token)
            if pattern is None:
                return default
            raw = token.encode()
            found = self._found[token] = frozenset(
                path
                for path, data in self._contents.items()
                # A substring test first: the word-boundary pattern is slow to scan with.
                if token in self._assumed or (raw in data and pattern.search(data))
            )
        return found

    def files_naming(self, name: str) -> frozenset[str]:
        """Checked files whose text holds the identifier `name` as a whole word, whether or
        not any rule read them (a helper's caller may sit in a file no rule parses). Asked
        rarely, for a few names, so it is not cached beyond the name."""
        found = self._named.get(name)
        if found is None:
            raw = name.encode()
            pattern = re.compile(rb"(?<![A-Za-z0-9_])" + re.escape(raw) + rb"(?![A-Za-z0-9_])")
            found = self._named[name] = frozenset(
                path for path, data in self._contents.items() if raw in data and pattern.search(data)
            )
        return found

    def count(self, path: str, pattern: re.Pattern[bytes]) -> int:
        """How often `pattern` matches in one checked file's text (0 for a file not checked)."""
        return len(pattern.findall(self._contents.get(path, b"")))


def _add_broken_cells(results: list[FileResult | None], notebooks: dict[str, Notebook]) -> None:
    """A notebook cell that is not Python was left out of its notebook's code: say so (not
    cached with the code, which does not contain it)."""
    from torchlint.notebook.cells import broken_cell_findings

    for result in results:
        notebook = notebooks.get(result.path) if result is not None else None
        if notebook is not None and notebook.broken:
            result.findings.extend(broken_cell_findings(result.path, notebook))


def _word(token: str) -> re.Pattern[bytes]:
    """`token` not inside a longer word: "xla" is not in "xlabel", "cuda" is in "use_cuda"."""
    return re.compile(rb"(?<![A-Za-z])" + re.escape(token.encode()) + rb"(?![A-Za-z])")


class StaticEngine:
    def __init__(
        self, config: Config, pm: pluggy.PluginManager, rules: dict[str, type[Rule]], enabled: set[str], fixable: set[str] | None = None
    ) -> None:
        self.config = config
        self.pm = pm
        self.rules = rules
        self.enabled = frozenset(enabled)
        #: rules whose fixes may be offered and applied (None: all); `unfixable` ones lose theirs
        self.fixable = None if fixable is None else frozenset(fixable)
        self.active_rules = [
            rules[code]
            for code in sorted(enabled)
            if code in rules and code not in ENGINE_RULES and not rules[code].runtime_only
        ]
        self._wants_file_facts = bool(pm.hook.torchlint_file_facts.get_hookimpls())
        self._project_tokens = {
            token: _word(token) for token in sorted({token for rule in self.active_rules for token in rule.project_tokens})
        }
        self._assumed: set[str] = set()
        #: The last run's project phase (`keep_in_project` judges `--fix` re-checks by it).
        self.project: ProjectContext | None = None
        #: Per-file findings the project phase dropped (`Rule.keep_in_project`), for a caller
        #: whose evidence may prove them after all (`torchlint run`).
        self.refuted: list[Finding] = []
        #: Enabled codes whose findings are reported only where a run proves them (`torchlint
        #: run`'s off-by-default rules): a rule giving way to one of them would go unreported.
        self.proving: frozenset[str] = frozenset()
        #: Report notebook findings by cell (False: keep joined-source lines, for a caller
        #: that matches them against other positions first, like `torchlint run`).
        self.map_cells = True
        self.notebooks: dict[str, Notebook] = {}
        self._per_file_ignores = [
            (pattern, codes_for(codes, rules, where=f"{config.config_file or 'configuration'}: [tool.torchlint] per-file-ignores {pattern!r}"))
            for pattern, codes in config.per_file_ignores
        ]

    # -- one file ---------------------------------------------------------------------------
    def may_parse(self, data: bytes) -> bool:
        """Whether `check_bytes(data)` will probably parse (some rule's prefilter passes). Only
        for planning work: the bytes are read as UTF-8, which a coding cookie can defeat."""
        text = data.decode("utf-8", "replace")
        seen: dict[str, bool] = {}
        return any(_rule_wants_file(rule, text, seen) for rule in self.active_rules)

    def check_text(
        self, path: str, text: str, parser: ChunkParser | None = None, interrupt: Callable[[], None] | None = None
    ) -> FileResult:
        """`parser`: reuse the statements of an earlier version of the same file (the
        language server's re-check after an edit) instead of parsing all of it. `interrupt`:
        called as the rules run; it raises (torchlint.static.interrupt) to abandon the check."""
        result = FileResult(path)
        seen: dict[str, bool] = {}
        candidates = [rule for rule in self.active_rules if _rule_wants_file(rule, text, seen)]
        from torchlint.static.nesting import within_libcst_bounds

        if candidates and within_libcst_bounds(text):
            # The text proves libcst survives it, so libcst alone parses it (and reports its
            # syntax errors through CPython's message): `ast` would cost a fifth more.
            return self._check_with_libcst(result, path, text, candidates, parser=parser, interrupt=interrupt)
        # Otherwise CPython parses first: syntax errors are reported whatever rules are
        # enabled, and code nested deeper than libcst survives never reaches libcst.
        tree, problem = _parse_with_python(text)
        if problem is not None and candidates and tree is None and problem[0].startswith("syntax error"):
            # Syntax newer than the running Python (`def f[T]()` under 3.11) is still Python
            # to libcst: let it try, if the tokens bound the nesting instead of `ast`.
            from torchlint.static.nesting import shallow_by_tokens

            if shallow_by_tokens(text):
                return self._check_with_libcst(result, path, text, candidates, python_problem=problem, interrupt=interrupt)
        if problem is not None:
            result.findings.append(engine_finding(FileNotChecked, path, *problem))
            return result
        if not candidates:
            return result
        from torchlint.static.nesting import MAX_NESTING, deepest_line, too_deep

        if too_deep(tree, text):
            message = f"nesting too deep to check safely (more than {MAX_NESTING} levels)"
            result.findings.append(engine_finding(FileNotChecked, path, message, deepest_line(tree)))
            return result
        del tree
        return self._check_with_libcst(result, path, text, candidates, parser=parser, interrupt=interrupt)

    def _check_with_libcst(
        self,
        result: FileResult,
        path: str,
        text: str,
        candidates: list[type[Rule]],
        python_problem: tuple[str, int, int] | None = None,
        parser: ChunkParser | None = None,
        interrupt: Callable[[], None] | None = None,
    ) -> FileResult:
        """Parse with libcst and run `candidates`. When CPython already refused the text,
        its error (with its position) is what a libcst failure reports. The tree stays out
        of the cycle collector while the rules run (torchlint.static.frozen_tree)."""
        from torchlint.static.frozen_tree import FrozenTree

        with FrozenTree() as frozen:
            return self._parse_and_run(frozen, result, path, text, candidates, python_problem, parser, interrupt)

    def _parse_and_run(
        self,
        frozen: FrozenTree,
        result: FileResult,
        path: str,
        text: str,
        candidates: list[type[Rule]],
        python_problem: tuple[str, int, int] | None,
        parser: ChunkParser | None,
        interrupt: Callable[[], None] | None,
    ) -> FileResult:
        import libcst as cst

        from torchlint.static.context import FileContext
        from torchlint.static.parsing import parse_module
        from torchlint.static.rules_run import run_rules

        positions = None
        try:
            if parser is not None:
                parsed = frozen.parse(parser.parse, text)
                module, positions = parsed.module, parsed.positions()
            else:
                module = frozen.parse(parse_module, text)
        except cst.ParserSyntaxError as exc:
            line, column = _position(text, exc.raw_line, exc.raw_column + 1)
            # CPython's message, where it refuses the text too, reads better and places
            # tokenizer errors (an unclosed string) where they are.
            problem = python_problem or _parse_with_python(text)[1] or (f"syntax error: {exc.message}", line, column)
            result.findings.append(engine_finding(FileNotChecked, path, *problem))
            return result
        except (RecursionError, MemoryError) as exc:
            result.findings.append(engine_finding(FileNotChecked, path, f"nesting too deep to check safely ({type(exc).__name__})"))
            return result
        except Exception as exc:  # libcst's native parser can raise its own errors
            problem = python_problem or (f"could not parse: {exc}".splitlines()[0], 1, 1)
            result.findings.append(engine_finding(FileNotChecked, path, *problem))
            return result
        result.parsed = True

        ctx = FileContext(path, text, module, [], self.config, positions=positions)
        ctx.enabled_codes = self.enabled
        crashes = run_rules(ctx, candidates, interrupt)
        if self._wants_file_facts:
            for facts in self.pm.hook.torchlint_file_facts(ctx=ctx):
                if facts:
                    ctx.facts.update(facts)
        result.findings.extend(ctx.findings())
        result.findings.extend(crashes)
        result.facts = ctx.facts
        return result

    def check_bytes(self, path: str, data: bytes) -> FileResult:
        """Check a file's bytes: Python source, or for a `.ipynb` path the notebook's JSON
        (its code cells are checked as one module; lines count in the joined cells)."""
        source = decode_file(path, data)
        if source.text is None:
            return FileResult(
                path, [engine_finding(FileNotChecked, path, f"cannot check: {source.problem}", source.line, source.column)]
            )
        return self.check_text(path, source.text)

    # -- many files -------------------------------------------------------------------------
    def check_paths(
        self, paths: list[Path], *, cwd: Path, cache: Cache | None = None, jobs: int = 1, project_context: bool | None = None
    ) -> CheckResult:
        """Check the files `paths` name or hold, reading the rest of their projects for the
        project phase (torchlint.static.project_rest) and reporting only the files given.
        `project_context=False`: read only them (None: as the configuration says)."""
        items = discover(paths, self.config, cwd=cwd)
        warnings: list[str] = []
        rest = self._rest_of_projects(paths, items, cwd, warnings) if project_context is not False else []
        results, contents, notebooks, hits = self._file_results([*items, *rest], cache, jobs)
        given = {item.display for item in items}
        # Suppressions are read from the bytes that were checked (no second read from disk,
        # and a file edited meanwhile cannot be judged against other text).
        # (and from every file with a suppression comment, to tell the ones that silence nothing)
        texts = {
            r.path: (contents[r.path].decode("utf-8") if r.path in notebooks else decode_source(contents[r.path]).text) or ""
            for r in results
            if r.path in given and r.path in contents and (r.findings or _has_directive(contents[r.path]))
        }
        tokens = TokenIndex(contents, self._project_tokens, self._assumed)
        check = self._finish(items, results, texts, tokens, notebooks, rest=rest)
        check.cache_hits = sum(1 for display in hits if display in given)
        check.warnings = warnings
        return check

    def _rest_of_projects(self, paths: list[Path], items: list[Discovered], cwd: Path, warnings: list[str]) -> list[Discovered]:
        """The other files of the given files' projects, unless `project-context = false`."""
        if not self.config.project_context:
            return []
        from torchlint.static.project_rest import rest_of_projects

        from torchlint.config import shared_folder

        # Outside any marked project the folder the command runs in is the project, unless
        # anyone may write there (/tmp): whoever planted files there is not the one checking.
        fallback = None if shared_folder(cwd) else cwd
        return rest_of_projects(paths, items, self.config, cwd=cwd, finder=RootFinder(fallback), warnings=warnings)

    def _file_results(
        self, items: list[Discovered], cache: Cache | None, jobs: int
    ) -> tuple[list[FileResult], dict[str, bytes], dict[str, Notebook], set[str]]:
        """Each file's result, from the cache when fresh, else checked (in `jobs` processes):
        (results, the bytes each was computed from, the notebooks among them, the cache hits)."""
        results: list[FileResult | None] = [None] * len(items)
        todo: list[tuple[int, str, bytes, str | None]] = []
        contents: dict[str, bytes] = {}  # what was checked, for suppression comments later
        notebooks: dict[str, Notebook] = {}
        hits: set[str] = set()
        for index, item in enumerate(items):
            data, problem = (None, item.problem) if item.problem else read_bytes(item.path)
            if data is None:
                results[index] = FileResult(item.display, [engine_finding(FileNotChecked, item.display, f"cannot check: {problem}")])
                continue
            code = data
            if item.path.suffix.lower() == ".ipynb":
                # Read here once for the cell map; what rules, suppressions and the cache see
                # is the joined code, so a run that only changed outputs hits the cache.
                source = decode_notebook(data)
                if source.text is None:
                    finding = engine_finding(FileNotChecked, item.display, f"cannot check: {source.problem}", source.line, source.column)
                    results[index] = FileResult(item.display, [finding])
                    continue
                notebooks[item.display] = source.notebook
                code = source.text.encode("utf-8")
            contents[item.display] = code
            key = entry_key(item.display, code, notebook=item.display in notebooks) if cache is not None else None
            if cache is not None:
                cached = cache.get(key)
                if cached is not None:
                    try:
                        restored = FileResult.from_json(item.display, cached)
                    except Exception:
                        # A broken write, or an entry someone edited: any entry that does not
                        # decode into findings is a miss, recomputed and overwritten.
                        restored = None
                    # a code no rule of this run has would crash or vanish further on
                    if restored is not None and all(f.code in self.rules for f in restored.findings):
                        results[index] = restored
                        hits.add(item.display)
                        continue
            todo.append((index, item.display, data, key))
        for (index, _, _, key), result in zip(todo, run_checks(self, [(display, data) for _, display, data, _ in todo], jobs)):
            results[index] = result
            if cache is not None and key is not None:
                cache.put(key, result.to_json())
        if notebooks:
            _add_broken_cells(results, notebooks)
        return [r for r in results if r is not None], contents, notebooks, hits

    def check_sources(self, sources: dict[str, str]) -> CheckResult:
        """Check in-memory files (used by rule-case tests and editor integrations)."""
        items = [Discovered(Path(name), name) for name in sorted(sources)]
        results = []
        texts: dict[str, str] = {}
        notebooks: dict[str, Notebook] = {}
        for item in items:
            source = decode_file(item.display, sources[item.display].encode("utf-8"))
            if source.notebook is not None:
                notebooks[item.display] = source.notebook
            if source.text is None and source.notebook is None and item.display.lower().endswith(".ipynb"):
                problem = f"cannot check: {source.problem}"
                results.append(FileResult(item.display, [engine_finding(FileNotChecked, item.display, problem, source.line, source.column)]))
                continue
            texts[item.display] = source.text or ""
            results.append(self.check_text(item.display, source.text or ""))
        _add_broken_cells(results, notebooks)
        tokens = TokenIndex({p: text.encode() for p, text in texts.items()}, self._project_tokens, self._assumed)
        return self._finish(items, results, texts, tokens, notebooks)

    def check_stdin(self, display: str, data: bytes, *, cache: Cache | None = None, jobs: int = 1) -> CheckResult:
        """Check source read from stdin as if it were the file `display` (`--stdin-filename`,
        else `-`): per-file ignores and the report use that name, and the rest of that file's
        project is read as a check of the file would read it (its on-disk copy left out).
        Stdin's source is never cached. A `.ipynb` name means the bytes are a notebook's JSON."""
        item = Discovered(Path(display), display)
        result = self.check_bytes(display, data)
        source = decode_file(display, data)
        notebooks = {display: source.notebook} if source.notebook is not None else {}
        texts = {display: source.text or ""}
        code = texts[display].encode("utf-8") if notebooks else data
        warnings: list[str] = []
        rest = self._rest_of_projects([], [item], Path.cwd(), warnings) if display != "-" else []
        results, contents, rest_notebooks, _ = self._file_results(rest, cache, jobs)
        tokens = TokenIndex({**contents, display: code}, self._project_tokens, self._assumed)
        check = self._finish([item], [result, *results], texts, tokens, {**rest_notebooks, **notebooks}, rest=rest)
        check.warnings = warnings
        return check

    def _finish(self, items: list[Discovered], results: list[FileResult], texts: dict[str, str], tokens: TokenIndex,
                notebooks: dict[str, Notebook] | None = None, rest: list[Discovered] = ()) -> CheckResult:
        """`items`: the files reported on; `rest`: other files of their projects, whose
        results (among `results`) feed the project phase and are not reported."""
        reported = {item.display for item in items}
        # A file that could not be read or parsed, a rule that crashed, a fix that could not be
        # written: reported whatever the selection, or `--select TL3 broken.py` would pass.
        findings = [
            f
            for result in results
            if result.path in reported
            for f in result.findings
            if f.code in self.enabled or f.code in ALWAYS_REPORTED
        ]
        self.project = self._project([*items, *rest], results, tokens)
        findings = self.keep_in_project(findings)
        findings.extend(f for f in self._project_findings() if f.path in reported)
        kept, suppressed = self._apply_suppressions(items, findings, texts)
        kept = self.drop_unfixable(kept)
        kept.sort(key=Finding.sort_key)
        #: The notebooks of this run, by display path (`torchlint run` maps its own findings).
        self.notebooks = dict(notebooks or {})
        if notebooks and self.map_cells:
            from torchlint.notebook.cells import to_cells

            kept = to_cells(kept, notebooks)
        return CheckResult(
            findings=kept,
            checked_paths={item.display for item in items},
            files_checked=len(items),
            files_parsed=sum(1 for r in results if r.parsed and r.path in reported),
            suppressed=suppressed,
            enabled=self.enabled,
        )

    def _project(self, items: list[Discovered], results: list[FileResult], tokens: TokenIndex) -> ProjectContext:
        from torchlint.static.context import ProjectContext
        from torchlint.static.modules import module_name

        facts = {r.path: r.facts for r in results if r.facts}
        paths = {item.display: item.path for item in items}
        return ProjectContext(
            facts=facts,
            module_names={display: module_name(paths.get(display, Path(display))) for display in facts},
            enabled=self.enabled,
            proving=self.proving,
            token_files=tokens,
            roots=ProjectRoots(paths),
        )

    def drop_unfixable(self, findings: list[Finding]) -> list[Finding]:
        """Findings of `unfixable` rules without their fix, as ruff shows them: no `[*]`, no
        fix in JSON, nothing for `--fix` to apply."""
        if self.fixable is None:
            return findings
        return [f if f.fix is None or f.code in self.fixable else dataclasses.replace(f, fix=None) for f in findings]

    def assume_mentioned(self, token: str) -> None:
        """Treat every checked file as naming `token` (a `project_tokens` word): `torchlint run
        --device cuda` puts the project on CUDA whatever its files say."""
        self._assumed.add(token)

    def keep_in_project(self, findings: list[Finding]) -> list[Finding]:
        """Per-file findings that stand once the whole project is known (`Rule.keep_in_project`).
        Before any project phase has run (a `--fix` re-check of one file) nothing is dropped."""
        project = getattr(self, "project", None)
        if project is None:
            return findings
        kept = []
        for finding in findings:
            rule = self.rules.get(finding.code)
            if rule is not None and not rule.belongs_in_project(project, finding):
                continue  # the other part of a split check reports this call
            if rule is None or rule.keep_in_project(project, finding):
                kept.append(finding)
            else:
                # `torchlint run` brings one back when the run proves it (a CUDA checkpoint that
                # failed to load in a project that never names an accelerator).
                self.refuted.append(finding)
        return kept

    def finish_results(self, items: list[Discovered], results: list[FileResult], contents: dict[str, bytes],
                       notebooks: dict[str, Notebook] | None = None) -> CheckResult:
        """`check_paths`' last step, for per-file results kept elsewhere: the language server
        keeps each file's result between edits and re-runs only this (the project phase and
        suppressions). `contents`: the bytes each result was computed from (a notebook's
        joined code cells); `notebooks`: the notebooks among them, by display path."""
        notebooks = notebooks or {}
        texts = {
            r.path: (contents[r.path].decode("utf-8", "surrogatepass") if r.path in notebooks else decode_source(contents[r.path]).text) or ""
            for r in results
            if r.path in contents and (r.findings or _has_directive(contents[r.path]))
        }
        tokens = TokenIndex(contents, self._project_tokens, self._assumed)
        return self._finish(items, results, texts, tokens, notebooks)

    def _project_findings(self) -> list[Finding]:
        project = self.project
        if not project.facts:
            return []
        findings: list[Finding] = []
        for code in sorted(self.enabled):
            rule = self.rules.get(code)
            if rule is not None:
                findings.extend(f for f in rule.project_check(project) if f.code in self.enabled)
        for extra in self.pm.hook.torchlint_project_check(project=project):
            findings.extend(f for f in extra or () if f.code in self.enabled)
        return findings

    def _apply_suppressions(self, items: list[Discovered], findings: list[Finding], texts: dict[str, str]) -> tuple[list[Finding], int]:
        by_path = {item.display: item.path for item in items}
        suppressions = {}
        kept = []
        suppressed = 0
        for finding in findings:
            if self._ignored_for_file(finding, by_path.get(finding.path)):
                suppressed += 1
                continue
            if finding.code != FileNotChecked.code:
                table = suppressions.get(finding.path)
                if table is None:
                    text = texts.get(finding.path)
                    if text is None:
                        source = read_source(by_path.get(finding.path, Path(finding.path)))
                        text = source.text or ""
                    table = suppressions[finding.path] = parse_suppressions(text)
                lines = (finding.location.line, finding.location.end_line)
                if table.silences(finding.code, finding.name, lines):
                    suppressed += 1
                    continue
            kept.append(finding)
        if UnusedSuppression.code in self.enabled:
            for path, text in texts.items():
                if path not in suppressions and ("noqa" in text.lower() or "torchlint:" in text):
                    suppressions[path] = parse_suppressions(text)
            for path, table in sorted(suppressions.items()):
                kept.extend(self._unused_suppressions(path, table))
        return kept, suppressed

    def _unused_suppressions(self, path: str, table) -> list[Finding]:
        """TL003 for each torchlint selector of the file that silenced nothing: a code or name
        of an enabled rule, a prefix of some, or a TL code no rule has."""
        found = []
        names = {rule.name: code for code, rule in self.rules.items()}
        for line, column, selector in table.unused():
            if selector in names:
                selector_codes = {names[selector]}
            elif _TORCHLINT_SELECTOR.fullmatch(selector):
                selector_codes = {code for code in self.rules if code.startswith(selector)}
            else:
                continue  # a bare noqa, or another linter's code
            if UnusedSuppression.code in selector_codes:
                continue
            if not selector_codes:
                message = f"`{selector}` in a suppression comment names no torchlint rule; it silences nothing"
            elif selector_codes & self.enabled:
                message = f"suppression of `{selector}` silences nothing here; remove it"
            else:
                continue  # its rules did not run: nothing to say
            found.append(engine_finding(UnusedSuppression, path, message, line, column))
        return found

    def _ignored_for_file(self, finding: Finding, found_at: Path | None = None) -> bool:
        """`found_at`: the file as discovered. The display path is relative to the working
        folder, which is not the project's for a language server started elsewhere."""
        if not self._per_file_ignores:
            return False
        path = found_at if found_at is not None else Path(finding.path)
        try:
            relative = path.absolute().relative_to(self.config.root).as_posix()
        except ValueError:
            relative = path.as_posix()
        for pattern, codes in self._per_file_ignores:
            if finding.code in codes and (fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(path.name, pattern)):
                return True
        return False
