"""Apply fixes to files: pass after pass until nothing more applies, each result re-parsed,
only files with a fixable finding touched, every write atomic."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchlint.fix import SAFE
from torchlint.fix.apply import apply_fixes
from torchlint.guarded_write import NotReplaced, WritePolicy, refusal, replace_unchanged
from torchlint.static.discover import Discovered
from torchlint.static.engine_rules import FixNotApplied, engine_finding
from torchlint.static.lines import python_lines
from torchlint.static.source import read_source

if TYPE_CHECKING:
    from torchlint.findings import Finding, Fix
    from torchlint.static.engine import StaticEngine

MAX_PASSES = 10


@dataclass(frozen=True)
class Rejection:
    """Why fixes were not applied, and where (the first finding concerned, else line 1)."""

    reason: str
    line: int = 1
    column: int = 1


@dataclass
class FileFix:
    path: str
    applied: list[Fix] = field(default_factory=list)
    #: (code, line, fix message) of each finding fixed, its line as the file was in that pass
    fixed: list[tuple[str, int, str]] = field(default_factory=list)
    diff: str = ""
    rejected: list[Rejection] = field(default_factory=list)
    notebook: Any = None  # a notebook's map from joined lines to cells

    def findings(self) -> list[Finding]:
        """Each rejection as a TL002 finding, so it is reported and sets the exit code."""
        found = [engine_finding(FixNotApplied, self.path, r.reason, r.line, r.column) for r in self.rejected]
        if self.notebook is not None:
            from torchlint.notebook.cells import to_cells

            found = to_cells(found, {self.path: self.notebook})
        return found


@dataclass
class FixOutcome:
    files: list[FileFix] = field(default_factory=list)

    @property
    def fixed(self) -> int:
        return sum(len(f.applied) for f in self.files)

    def rejections(self) -> list[Finding]:
        return [finding for file_fix in self.files for finding in file_fix.findings()]


def wanted(finding: Finding, unsafe: bool) -> bool:
    """Whether `--fix` applies this finding's fix (an `unfixable` rule's finding has none)."""
    return finding.fix is not None and (finding.fix.applicability == SAFE or unsafe)


def fix_findings(engine: StaticEngine, findings: list[Finding], *, unsafe: bool, write: bool,
                 read_only_too: bool = False) -> FixOutcome:
    """Fix each file with a wanted fix; with `write`, write each fixed file that is still as
    it was read, inside the project (through links), and not read-only unless `read_only_too`."""
    policy = WritePolicy(root=engine.config.root, read_only_too=read_only_too) if write else None
    outcome = FixOutcome()
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        if wanted(finding, unsafe):
            by_path.setdefault(finding.path, []).append(finding)
    for path, file_findings in sorted(by_path.items()):
        outcome.files.append(_fix_file(engine, path, file_findings, unsafe=unsafe, policy=policy))
    return outcome


def _fix_file(engine: StaticEngine, path: str, findings: list[Finding], *, unsafe: bool, policy: WritePolicy | None) -> FileFix:
    """`policy` None: compute the fixes and the diff, write nothing."""
    problem = refusal(Path(path), policy) if policy is not None else None
    if problem is not None:
        result = FileFix(path)
        first = min(findings, key=lambda f: (f.location.line, f.location.column)).location
        result.rejected.append(Rejection(problem, first.line, first.column))
        return result
    source = read_source(Path(path))
    if source.text is None:
        result = FileFix(path)
        result.rejected.append(Rejection(f"cannot read the file again: {source.problem}"))
        return result
    result, text = fix_text(engine, path, source.text, unsafe=unsafe)
    if text == source.text:
        return result
    data = None
    if source.notebook is not None:
        # The fixed joined cells go back into the cells they came from; the diff is per cell.
        from torchlint.notebook import NotebookError
        from torchlint.notebook.diff import notebook_diff

        result.notebook = source.notebook
        try:
            changed = source.notebook.cell_sources(text)
            data = source.notebook.with_sources(changed)
        except NotebookError as exc:
            result.rejected.append(Rejection(f"the fixes cannot be written back into the notebook: {exc}; left unchanged", exc.line, exc.column))
            result.applied, result.diff = [], ""
            return result
        result.diff = notebook_diff(path, source.notebook, changed)
    if policy is not None:
        try:
            replace_unchanged(Path(path), source.state, data if data is not None else source.encode(text), policy)
        except NotReplaced as exc:
            result.rejected.append(Rejection(str(exc)))
            result.applied, result.fixed = [], []
        except OSError as exc:
            result.rejected.append(Rejection(f"the fixes could not be written ({exc.strerror or exc}); the file is unchanged"))
            result.applied, result.fixed = [], []
    return result


def fix_text(engine: StaticEngine, path: str, original: str, *, unsafe: bool) -> tuple[FileFix, str]:
    """Fix `original` (the text of `path`, from disk or stdin) in memory: what was applied and
    rejected, and the fixed text. Nothing is written."""
    import libcst as cst

    result = FileFix(path)
    text = original
    # The fixes are derived again from the text about to be edited, never taken from the
    # findings that came in: those may come from a cache that anyone with write access to it
    # (a CI cache restored from a pull request) could have filled with edits of their own.
    findings = [f for f in _recheck(engine, path, text) if wanted(f, unsafe)]
    for passes in range(MAX_PASSES + 1):
        if passes == MAX_PASSES:
            if findings:  # like ruff: a bound on the passes, and a word when it is reached
                result.rejected.append(Rejection(
                    f"fixes still applied after {MAX_PASSES} passes; stopped there (run `--fix` again to go on)",
                    findings[0].location.line, findings[0].location.column))
            break
        attempt = apply_fixes(text, [f.fix for f in findings if f.fix is not None])
        for finding in findings:
            if finding.fix in attempt.stale:
                result.rejected.append(Rejection(
                    f"the fix for {finding.code} does not match the file's text at the finding; left unchanged",
                    finding.location.line, finding.location.column))
        if not attempt.fixes:
            break
        try:
            cst.parse_module(attempt.text)
        except Exception as exc:  # a fix that breaks the file is dropped, never written
            concerned = [f for f in findings if f.fix in attempt.fixes]
            codes = ", ".join(sorted({f.code for f in concerned}))
            where = concerned[0].location
            result.rejected.append(Rejection(
                f"the fix for {codes} would produce invalid code ({type(exc).__name__}); left unchanged", where.line, where.column))
            break
        text = attempt.text
        result.applied.extend(attempt.fixes)
        result.fixed.extend((f.code, f.location.line, f.fix.message) for f in findings if f.fix in attempt.fixes)
        findings = [f for f in _recheck(engine, path, text) if wanted(f, unsafe)]
    if text != original:
        result.diff = "".join(
            difflib.unified_diff(python_lines(original, True), python_lines(text, True), fromfile=f"a/{path}", tofile=f"b/{path}")
        )
    return result, text


def _recheck(engine: StaticEngine, path: str, text: str) -> list[Finding]:
    """Findings in the fixed text, after suppressions and per-file ignores, like a real run."""
    fresh = engine.check_text(path, text)
    project = getattr(engine, "project", None)
    if project is not None:
        # The project phase reads this file's facts as they are now, not as they were before
        # the last pass: TL302 leaves a call to TL301 only while TL301 still reports it there.
        project.facts[path] = fresh.facts
    findings = engine.keep_in_project([f for f in fresh.findings if f.code in engine.enabled])
    kept, _ = engine._apply_suppressions([Discovered(Path(path), path)], findings, {path: text})
    return engine.drop_unfixable(kept)
