"""GitLab Code Quality (a Code Climate subset): a JSON array of issues with fingerprints."""

from __future__ import annotations

import json
from typing import TextIO

from torchlint.findings import Finding, Severity
from torchlint.report import ReportContext

_SEVERITY = {Severity.ERROR: "major", Severity.WARNING: "minor", Severity.INFO: "info"}


def write_gitlab(findings: list[Finding], stream: TextIO, ctx: ReportContext) -> None:
    issues = []
    for finding, fingerprint in zip(findings, ctx.fingerprints(findings)):
        loc = ctx.file_location(finding)
        issues.append(
            {
                "type": "issue",
                "check_name": finding.code,
                "description": f"{ctx.notebook_label(finding)}{finding.code} {finding.message}",
                "categories": ["Bug Risk"],
                "severity": _SEVERITY[finding.severity],
                "fingerprint": fingerprint,
                "location": {
                    "path": ctx.relative_path(finding.path),
                    "positions": {
                        "begin": {"line": loc.line, "column": loc.column},
                        "end": {"line": loc.end_line, "column": loc.end_column},
                    },
                },
            }
        )
    json.dump(issues, stream, indent=2, ensure_ascii=False)
    stream.write("\n")
