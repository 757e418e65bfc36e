"""SARIF 2.1.0 for GitHub code scanning and other SARIF consumers.

Carries what GitHub needs: rule descriptions and help, full regions, repo-relative URIs,
`partialFingerprints` (so alerts follow code that moves) and `columnKind:
unicodeCodePoints` (torchlint's columns count code points).
"""

from __future__ import annotations

import json
import os
import re
from typing import TextIO

from torchlint import __version__
from torchlint.findings import Finding, Severity
from torchlint.report import ReportContext
from torchlint.ruledoc import render_markdown

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _first_paragraph(docs: str, heading: str) -> str:
    match = re.search(rf"## {re.escape(heading)}\s*\n(.*?)(?:\n\s*\n|\n##|$)", docs, flags=re.S)
    return " ".join(match.group(1).split()) if match else ""


def _rule_descriptor(rule) -> dict:
    docs = rule.docs()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": _first_paragraph(docs, "What it does") or rule.summary},
        "help": {"text": docs or rule.summary, "markdown": render_markdown(rule)},
        "defaultConfiguration": {"level": _LEVEL[rule.severity], "enabled": rule.default_enabled},
        "properties": {"tags": ["pytorch", "correctness"]},
    }


def _uri(path: str) -> str:
    """A relative URI reference, as SARIF's artifactLocation wants: percent-encoded bytes, so a
    file name that is not UTF-8 (or holds a space or `#`) still makes valid JSON and one URI."""
    from urllib.parse import quote

    return quote(os.fsencode(path), safe="/")


def write_sarif(findings: list[Finding], stream: TextIO, ctx: ReportContext) -> None:
    codes = sorted(set(ctx.rules) | {f.code for f in findings})
    index = {code: i for i, code in enumerate(codes)}
    descriptors = [
        _rule_descriptor(ctx.rules[code]) if code in ctx.rules else {"id": code, "shortDescription": {"text": code}}
        for code in codes
    ]
    results = []
    for finding, fingerprint in zip(findings, ctx.fingerprints(findings)):
        loc = ctx.file_location(finding)
        results.append(
            {
                "ruleId": finding.code,
                "ruleIndex": index[finding.code],
                "level": _LEVEL[finding.severity],
                "message": {"text": ctx.notebook_label(finding) + finding.message},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": _uri(ctx.relative_path(finding.path)), "uriBaseId": "%SRCROOT%"},
                            "region": {
                                "startLine": loc.line,
                                "startColumn": loc.column,
                                "endLine": loc.end_line,
                                "endColumn": loc.end_column,
                            },
                        }
                    }
                ],
                "partialFingerprints": {"torchlint/v1": fingerprint},
            }
        )
        if finding.cell is not None:  # the region is in the .ipynb's JSON; this is where Jupyter shows it
            results[-1]["properties"] = {"notebookCell": finding.cell, "cellLine": finding.location.line,
                                         "cellColumn": finding.location.column}
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "torchlint", "version": __version__, "semanticVersion": __version__, "rules": descriptors}},
                "originalUriBaseIds": {"%SRCROOT%": {"uri": ctx.repo_root().as_uri() + "/"}},
                "columnKind": "unicodeCodePoints",
                "invocations": [{"executionSuccessful": True}],
                "results": results,
            }
        ],
    }
    json.dump(log, stream, indent=2, ensure_ascii=False)
    stream.write("\n")
