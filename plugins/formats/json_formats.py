"""Machine formats: a ruff-style JSON array, or one JSON object per line."""

from __future__ import annotations

import json
from typing import TextIO

from torchlint.findings import Finding
from torchlint.report import ReportContext


def write_json(findings: list[Finding], stream: TextIO, ctx: ReportContext) -> None:
    json.dump([f.to_json() for f in findings], stream, indent=2, ensure_ascii=False)
    stream.write("\n")


def write_json_lines(findings: list[Finding], stream: TextIO, ctx: ReportContext) -> None:
    for finding in findings:
        stream.write(json.dumps(finding.to_json(), ensure_ascii=False) + "\n")
