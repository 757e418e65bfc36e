"""Human formats: full (with the source line and carets), concise, pylint."""

from __future__ import annotations

from typing import TextIO

from torchlint.findings import Finding
from torchlint.notebook.cells import location_text
from torchlint.plugins.formats.escape import escape_control
from torchlint.report import ReportContext
from torchlint.report.style import PLAIN, Style


def headline(finding: Finding, style: Style = PLAIN) -> str:
    fixable = " " + style.fixable("[*]") if finding.fix is not None and finding.fix.applicability == "safe" else ""
    path, message = escape_control(finding.path), escape_control(finding.message)
    return f"{style.path(path)}:{location_text(finding)}: {style.code(finding.code)}{fixable} {message}"


def write_concise(findings: list[Finding], stream: TextIO, ctx: ReportContext) -> None:
    style = Style(ctx.color)
    for finding in findings:
        stream.write(headline(finding, style) + "\n")


def write_pylint(findings: list[Finding], stream: TextIO, ctx: ReportContext) -> None:
    for finding in findings:
        path, message = escape_control(finding.path), escape_control(finding.message)
        where = f"cell {finding.cell}:{finding.location.line}" if finding.cell is not None else finding.location.line
        stream.write(f"{path}:{where}: [{finding.code}] {message}\n")


def write_full(findings: list[Finding], stream: TextIO, ctx: ReportContext) -> None:
    style = Style(ctx.color)
    for finding in findings:
        stream.write(headline(finding, style) + "\n")
        # TL000 means the file could not be read as text: never echo its bytes.
        snippet = _snippet(finding, ctx, style) if finding.code != "TL000" else ""
        stream.write(snippet)
        help_line = _help(finding, style)
        if help_line:
            stream.write(help_line)
        if snippet or help_line:
            stream.write("\n")
        for evidence in finding.evidence:
            stream.write(f"  = {evidence.status}: {evidence.detail}\n")


def _help(finding: Finding, style: Style) -> str:
    """The fix as ruff shows it, under the snippet: what `--fix` would do."""
    fix = finding.fix
    if fix is None or not fix.message:
        return ""
    how = "" if fix.applicability == "safe" else " (unsafe: applied with --fix --unsafe-fixes)"
    return f"  = {style.help('help')}: {escape_control(fix.message)}{how}\n"


def _snippet(finding: Finding, ctx: ReportContext, style: Style = PLAIN) -> str:
    lines = ctx.finding_lines(finding)
    loc = finding.location
    if not lines or not (1 <= loc.line <= len(lines)):
        return ""
    text = escape_control(lines[loc.line - 1].expandtabs(1))
    width = len(str(loc.line))
    end = loc.end_column if loc.end_line == loc.line else len(text) + 1
    carets = "^" * max(1, end - loc.column)
    pad = " " * width
    bar = style.gutter("|")
    return (
        f"{pad} {bar}\n{style.gutter(str(loc.line))} {bar} {text}\n"
        f"{pad} {bar} {' ' * (loc.column - 1)}{style.carets(carets + ' ' + finding.code)}\n{pad} {bar}\n"
    )
