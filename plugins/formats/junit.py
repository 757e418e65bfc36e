"""JUnit XML: one test suite per file, one failing test case per finding (CI dashboards)."""

from __future__ import annotations

from itertools import groupby
from typing import TextIO
from xml.etree import ElementTree as ET

from torchlint.findings import Finding
from torchlint.plugins.formats.escape import escape_control
from torchlint.report import ReportContext


def write_junit(findings: list[Finding], stream: TextIO, ctx: ReportContext) -> None:
    root = ET.Element("testsuites", name="torchlint", tests=str(len(findings)), failures=str(len(findings)))
    if not findings:
        ET.SubElement(root, "testsuite", name="torchlint", tests="1", failures="0").append(
            ET.Element("testcase", name="no findings", classname="torchlint")
        )
    for path, group in groupby(findings, key=lambda f: f.path):
        group = list(group)
        path = escape_control(path)  # XML 1.0 cannot hold most control characters at all
        suite = ET.SubElement(root, "testsuite", name=path, tests=str(len(group)), failures=str(len(group)))
        for finding in group:
            loc = finding.location
            case = ET.SubElement(suite, "testcase", name=f"torchlint.{finding.code}", classname=path, line=str(loc.line))
            message = escape_control(finding.message)
            failure = ET.SubElement(case, "failure", message=message, type=finding.code)
            cell = f"cell {finding.cell}, " if finding.cell is not None else ""
            failure.text = f"{cell}line {loc.line}, col {loc.column}, {finding.code} ({finding.name}): {message}"
    ET.indent(root) if hasattr(ET, "indent") else None
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    stream.write(ET.tostring(root, encoding="unicode"))
    stream.write("\n")
