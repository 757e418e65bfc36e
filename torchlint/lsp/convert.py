"""Findings as LSP data: diagnostics, hovers, code actions (fixes, noqa, docs)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from lsprotocol import types

from torchlint.findings import Severity
from torchlint.fix.apply import apply_fixes
from torchlint.lsp.positions import LineIndex

if TYPE_CHECKING:
    from torchlint.findings import Edit, Finding
    from torchlint.rule import Rule

SOURCE = "torchlint"
OPEN_DOCS_COMMAND = "torchlint.openDocs"
_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}


def finding_range(finding: Finding, lines: LineIndex) -> types.Range:
    loc = finding.location
    start = lines.to_lsp(loc.line, loc.column)
    end = lines.to_lsp(loc.end_line, loc.end_column)
    if end < start:
        end = start
    return types.Range(types.Position(*start), types.Position(*end))


def diagnostic(finding: Finding, lines: LineIndex, docs_uri: Callable[[str], str | None]) -> types.Diagnostic:
    href = docs_uri(finding.code)
    return types.Diagnostic(
        range=finding_range(finding, lines),
        message=finding.message,
        severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=finding.code,
        code_description=types.CodeDescription(href=href) if href else None,
        source=SOURCE,
        data={"name": finding.name},
    )


def _contains(rng: types.Range, position: types.Position) -> bool:
    start, end = (rng.start.line, rng.start.character), (rng.end.line, rng.end.character)
    return start <= (position.line, position.character) <= end


def _overlaps(a: types.Range, b: types.Range) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and (b.start.line, b.start.character) <= (
        a.end.line,
        a.end.character,
    )


def hover(findings: list[Finding], lines: LineIndex, position: types.Position, rules: dict[str, type[Rule]]) -> types.Hover | None:
    """The documentation of each rule with a finding under the cursor, after its message."""
    from torchlint.ruledoc import render_markdown

    under = [f for f in findings if _contains(finding_range(f, lines), position)]
    if not under:
        return None
    parts = []
    shown: set[str] = set()
    for finding in under:
        rule = rules.get(finding.code)
        parts.append(f"**{finding.code}** `{finding.name}`: {finding.message}")
        if rule is not None and finding.code not in shown:
            shown.add(finding.code)
            parts.append(render_markdown(rule))
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)),
        range=finding_range(under[0], lines),
    )


def _text_edit(edit: Edit, lines: LineIndex) -> types.TextEdit:
    start = lines.to_lsp(edit.line, edit.column)
    end = lines.to_lsp(edit.end_line, edit.end_column)
    return types.TextEdit(range=types.Range(types.Position(*start), types.Position(*end)), new_text=edit.content)


def code_actions(
    uri: str,
    text: str,
    findings: list[Finding],
    lines: LineIndex,
    wanted: types.Range,
    docs_uri: Callable[[str], str | None],
) -> list[types.CodeAction]:
    """For each finding the range touches: its fix (labelled when unsafe), a noqa for its
    line, and a link to its rule's docs (once per rule)."""
    actions: list[types.CodeAction] = []
    noqa_actions: list[types.CodeAction] = []
    docs_actions: list[types.CodeAction] = []
    silenced: set[tuple[int, str]] = set()
    documented: set[str] = set()
    for finding in findings:
        rng = finding_range(finding, lines)
        if not _overlaps(rng, wanted):
            continue
        diag = diagnostic(finding, lines, docs_uri)
        fix = finding.fix
        # Only a fix that still lands on the text it was made for (the same check `--fix`
        # makes before writing).
        if fix is not None and fix.edits and not apply_fixes(text, [fix]).stale:
            unsafe = fix.applicability != "safe"
            actions.append(
                types.CodeAction(
                    title=f"{finding.code}: {fix.message}" + (" (unsafe)" if unsafe else ""),
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diag],
                    is_preferred=not unsafe,
                    edit=types.WorkspaceEdit(changes={uri: [_text_edit(e, lines) for e in fix.edits]}),
                )
            )
        action = _noqa_action(uri, text, finding, lines, diag)
        if action is not None and (finding.location.line, finding.code) not in silenced:
            silenced.add((finding.location.line, finding.code))
            noqa_actions.append(action)
        if finding.code not in documented and docs_uri(finding.code):
            documented.add(finding.code)
            docs_actions.append(
                types.CodeAction(
                    title=f"Open the docs of {finding.code}",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diag],
                    command=types.Command(
                        title=f"Open the docs of {finding.code}",
                        command=OPEN_DOCS_COMMAND,
                        arguments=[finding.code, uri],
                    ),
                )
            )
    return actions + noqa_actions + docs_actions


def _noqa_action(uri: str, text: str, finding: Finding, lines: LineIndex, diag: types.Diagnostic) -> types.CodeAction | None:
    """`# noqa: TLxxx` on the line `check --add-noqa` would put it (the finding's first line
    that can end in a comment), merged into a noqa already there."""
    from torchlint.add_noqa import silencing_line

    found = silencing_line(text, finding)
    if found is None:
        return None
    number, edited = found
    start = lines.to_lsp(number, 1)
    end = lines.to_lsp(number, len(lines.line(number)) + 1)
    return types.CodeAction(
        title=f"Disable {finding.code} for this line",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diag],
        edit=types.WorkspaceEdit(
            changes={uri: [types.TextEdit(range=types.Range(types.Position(*start), types.Position(*end)), new_text=edited)]}
        ),
    )
