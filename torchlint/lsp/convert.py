"""Findings as LSP data: diagnostics, hovers, code actions (fixes, noqa, docs)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from lsprotocol import types

from torchlint.findings import Severity

if TYPE_CHECKING:
    from torchlint.findings import Finding
    from torchlint.lsp.views import View
    from torchlint.rule import Rule

SOURCE = "torchlint"
OPEN_DOCS_COMMAND = "torchlint.openDocs"
_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}


def diagnostic(finding: Finding, view: View, docs_uri: Callable[[str], str | None]) -> types.Diagnostic:
    href = docs_uri(finding.code)
    return types.Diagnostic(
        range=view.range(finding),
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


def hover(view: View, position: types.Position, rules: dict[str, type[Rule]]) -> types.Hover | None:
    """The documentation of each rule with a finding under the cursor, after its message."""
    from torchlint.ruledoc import render_markdown

    under = [f for f in view.findings if _contains(view.range(f), position)]
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
        range=view.range(under[0]),
    )


def code_actions(view: View, wanted: types.Range, docs_uri: Callable[[str], str | None]) -> list[types.CodeAction]:
    """For each finding the range touches: its fix (labelled when unsafe), a noqa for its
    line, and a link to its rule's docs (once per rule)."""
    actions: list[types.CodeAction] = []
    noqa_actions: list[types.CodeAction] = []
    docs_actions: list[types.CodeAction] = []
    silenced: set[tuple[int, str]] = set()
    documented: set[str] = set()
    for finding in view.findings:
        if not _overlaps(view.range(finding), wanted):
            continue
        diag = diagnostic(finding, view, docs_uri)
        fix = finding.fix
        changes = view.fix_changes(fix) if fix is not None and fix.edits else None
        if changes:
            unsafe = fix.applicability != "safe"
            actions.append(
                types.CodeAction(
                    title=f"{finding.code}: {fix.message}" + (" (unsafe)" if unsafe else ""),
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diag],
                    is_preferred=not unsafe,
                    edit=types.WorkspaceEdit(changes=changes),
                )
            )
        if (finding.location.line, finding.code) not in silenced:
            noqa = view.noqa_changes(finding)
            if noqa is not None:
                silenced.add((finding.location.line, finding.code))
                noqa_actions.append(
                    types.CodeAction(
                        title=f"Disable {finding.code} for this line",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diag],
                        edit=types.WorkspaceEdit(changes=noqa),
                    )
                )
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
                        # the checked file (a cell's notebook), whose project's rules apply
                        arguments=[finding.code, view.path.as_uri()],
                    ),
                )
            )
    return actions + noqa_actions + docs_actions
