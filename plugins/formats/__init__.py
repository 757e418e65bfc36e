"""Built-in output formats: full (with source snippets), concise, json, json-lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TextIO

from torchlint.findings import Finding
from torchlint.pluginmanager import hookimpl

FORMATS = ("full", "concise", "json", "json-lines")


@hookimpl
def torchlint_output_formats() -> list[str]:
    return list(FORMATS)


@hookimpl(trylast=True)
def torchlint_report(findings: list[Finding], format: str, stream: TextIO, config) -> bool | None:
    if format == "json":
        json.dump([f.to_json() for f in findings], stream, indent=2, ensure_ascii=False)
        stream.write("\n")
    elif format == "json-lines":
        for finding in findings:
            stream.write(json.dumps(finding.to_json(), ensure_ascii=False) + "\n")
    elif format == "concise":
        for finding in findings:
            stream.write(_headline(finding) + "\n")
    elif format == "full":
        lines_cache: dict[str, list[str] | None] = {}
        for finding in findings:
            stream.write(_headline(finding) + "\n")
            # TL000 means the file could not be read as text: never echo its bytes.
            snippet = _snippet(finding, lines_cache) if finding.code != "TL000" else ""
            if snippet:
                stream.write(snippet)
    else:
        return None
    return True


def _headline(finding: Finding) -> str:
    loc = finding.location
    fixable = " [*]" if finding.fix is not None else ""
    return f"{finding.path}:{loc.line}:{loc.column}: {finding.code}{fixable} {finding.message}"


def _snippet(finding: Finding, cache: dict[str, list[str] | None]) -> str:
    if finding.path not in cache:
        try:
            cache[finding.path] = Path(finding.path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            cache[finding.path] = None
    lines = cache[finding.path]
    loc = finding.location
    if not lines or not (1 <= loc.line <= len(lines)):
        return ""
    text = lines[loc.line - 1].expandtabs(1)
    width = len(str(loc.line))
    end = loc.end_column if loc.end_line == loc.line else len(text) + 1
    carets = "^" * max(1, end - loc.column)
    pad = " " * width
    return (
        f"{pad} |\n"
        f"{loc.line} | {text}\n"
        f"{pad} | {' ' * (loc.column - 1)}{carets} {finding.code}\n"
        f"{pad} |\n\n"
    )
