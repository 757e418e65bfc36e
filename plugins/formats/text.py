"""Human formats: full (with the source line and carets), concise, pylint."""

from __future__ import annotations

from typing import TextIO

from torchlint.findings import Finding
from torchlint.notebook.cells import location_text
from torchlint.plugins.formats.escape import escape_control
from torchlint.report import ReportContext


def headline(finding: Finding) -> str:
    fixable = " [*]" if finding.fix is not None and finding.fix.applicability == "safe" else ""
    path, message = escape_control(finding.path), escape_control(finding.message)
    return f"{path}:{location_text(finding)}: {finding.code}{fixable} {message}"


def write_concise(findings: list[Finding], stream: TextIO, ctx: ReportContext) -> None:
    for finding in findings:
        stream.write(headline(finding) + "\n")


def write_pylint(findings: list[Finding], stream: TextIO, ctx: ReportContext) -> None:
    for finding in findings:
        path, message = escape_control(finding.path), escape_control(finding.message)
        where = f"cell {finding.cell}:{finding.location.line}" if finding.cell is not None else finding.location.line
        stream.write(f"{path}:{where}: [{finding.code}] {message}\n")


def write_full(findings: list[Finding], stream: TextIO, ctx: ReportContext) -> None:
    for finding in findings:
        stream.write(headline(finding) + "\n")
        # TL000 means the file could not be read as text: never echo its bytes.
        if finding.code != "TL000":
            stream.write(_snippet(finding, ctx))
        for evidence in finding.evidence:
            stream.write(f"  = {evidence.status}: {evidence.detail}\n")


def _snippet(finding: Finding, ctx: ReportContext) -> str:
    lines = ctx.finding_lines(finding)
    loc = finding.location
    if not lines or not (1 <= loc.line <= len(lines)):
        return ""
    text = escape_control(lines[loc.line - 1].expandtabs(1))
    width = len(str(loc.line))
    end = loc.end_column if loc.end_line == loc.line else len(text) + 1
    carets = "^" * max(1, end - loc.column)
    pad = " " * width
    return f"{pad} |\n{loc.line} | {text}\n{pad} | {' ' * (loc.column - 1)}{carets} {finding.code}\n{pad} |\n\n"
