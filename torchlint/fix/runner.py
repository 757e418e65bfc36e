"""Apply fixes to files: pass after pass until nothing more applies, each result re-parsed,
only files with a fixable finding touched, every write atomic."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from torchlint.atomic import write_atomic
from torchlint.fix import SAFE
from torchlint.fix.apply import apply_fixes
from torchlint.static.discover import Discovered
from torchlint.static.source import read_source

if TYPE_CHECKING:
    from torchlint.findings import Finding, Fix
    from torchlint.static.engine import StaticEngine

MAX_PASSES = 10


@dataclass
class FileFix:
    path: str
    applied: list[Fix] = field(default_factory=list)
    diff: str = ""
    rejected: list[str] = field(default_factory=list)


@dataclass
class FixOutcome:
    files: list[FileFix] = field(default_factory=list)

    @property
    def fixed(self) -> int:
        return sum(len(f.applied) for f in self.files)


def wanted(finding: Finding, unsafe: bool) -> bool:
    return finding.fix is not None and (finding.fix.applicability == SAFE or unsafe)


def fix_findings(engine: StaticEngine, findings: list[Finding], *, unsafe: bool, write: bool) -> FixOutcome:
    outcome = FixOutcome()
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        if wanted(finding, unsafe):
            by_path.setdefault(finding.path, []).append(finding)
    for path, file_findings in sorted(by_path.items()):
        outcome.files.append(_fix_file(engine, path, file_findings, unsafe=unsafe, write=write))
    return outcome


def _fix_file(engine: StaticEngine, path: str, findings: list[Finding], *, unsafe: bool, write: bool) -> FileFix:
    import libcst as cst

    result = FileFix(path)
    source = read_source(Path(path))
    if source.text is None:
        result.rejected.append(f"cannot read the file again: {source.problem}")
        return result
    original = text = source.text
    for _ in range(MAX_PASSES):
        candidate, applied = apply_fixes(text, [f.fix for f in findings if f.fix is not None])
        if not applied:
            break
        try:
            cst.parse_module(candidate)
        except Exception as exc:  # a fix that breaks the file is dropped, never written
            codes = ", ".join(sorted({f.code for f in findings if f.fix in applied}))
            result.rejected.append(f"the fix for {codes} would produce invalid code ({type(exc).__name__}); left unchanged")
            break
        text = candidate
        result.applied.extend(applied)
        findings = [f for f in _recheck(engine, path, text) if wanted(f, unsafe)]
    if text == original:
        return result
    result.diff = "".join(
        difflib.unified_diff(original.splitlines(True), text.splitlines(True), fromfile=f"a/{path}", tofile=f"b/{path}")
    )
    if write:
        write_atomic(Path(path), source.encode(text))
    return result


def _recheck(engine: StaticEngine, path: str, text: str) -> list[Finding]:
    """Findings in the fixed text, after suppressions and per-file ignores, like a real run."""
    fresh = engine.check_text(path, text)
    findings = [f for f in fresh.findings if f.code in engine.enabled]
    kept, _ = engine._apply_suppressions([Discovered(Path(path), path)], findings, {path: text})
    return kept
