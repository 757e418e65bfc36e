"""GitHub Actions workflow commands: `::warning file=...,line=...::message`.

Data (the message) escapes %, CR and LF; property values also escape ':' and ','.
GitHub shows at most 10 error and 10 warning annotations per step, so the most severe
findings come first only in the order they are given (already sorted by path and line).
"""

from __future__ import annotations

from typing import TextIO

from torchlint.findings import Finding, Severity
from torchlint.plugins.formats.escape import escape_control
from torchlint.report import ReportContext

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return escape_control(text)  # ESC and U+2028 too, not only the CR and LF GitHub names


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def write_github(findings: list[Finding], stream: TextIO, ctx: ReportContext) -> None:
    for finding in findings:
        loc = ctx.file_location(finding)
        properties = ",".join(
            f"{key}={escape_property(str(value))}"
            for key, value in (
                ("file", ctx.relative_path(finding.path)),
                ("line", loc.line),
                ("col", loc.column),
                ("endLine", loc.end_line),
                ("endColumn", loc.end_column),
                ("title", f"{finding.code} ({finding.name})"),
            )
        )
        stream.write(f"::{_LEVEL[finding.severity]} {properties}::{escape_data(f'{ctx.notebook_label(finding)}{finding.code} {finding.message}')}\n")
