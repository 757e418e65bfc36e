"""Built-in output formats, each in its own module; this plugin routes `--output-format`."""

from __future__ import annotations

from typing import TextIO

from torchlint.findings import Finding
from torchlint.pluginmanager import hookimpl
from torchlint.report import ReportContext

import importlib

# name -> (module, writer): a run imports only the module of the format it writes.
WRITERS = {
    "full": ("text", "write_full"),
    "concise": ("text", "write_concise"),
    "pylint": ("text", "write_pylint"),
    "json": ("json_formats", "write_json"),
    "json-lines": ("json_formats", "write_json_lines"),
    "sarif": ("sarif", "write_sarif"),
    "github": ("github", "write_github"),
    "gitlab": ("codeclimate", "write_gitlab"),
    "junit": ("junit", "write_junit"),
}


@hookimpl
def torchlint_output_formats() -> list[str]:
    return list(WRITERS)


@hookimpl(trylast=True)
def torchlint_report(findings: list[Finding], format: str, stream: TextIO, config, rules, color: bool = False) -> bool | None:
    if format not in WRITERS:
        return None
    module_name, function = WRITERS[format]
    writer = getattr(importlib.import_module(f"{__name__}.{module_name}"), function)
    writer(findings, stream, ReportContext(config, rules or {}, color=bool(color)))
    return True
