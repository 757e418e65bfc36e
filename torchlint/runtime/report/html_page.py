"""`torchlint run --report DIR`: report.html (self-contained: inline CSS and SVG, nothing
fetched), findings.json, and the trace.json the profile probe exported.

Parent side; reads the user's source files only to show snippets around findings. The page
holds the findings; each probe's own part comes from its plugin as a ``RunSection``.
"""

from __future__ import annotations

import io
import json
import linecache
import os
from pathlib import Path
from typing import Any

from torchlint.findings import Finding
from torchlint.runtime.merge.matching import Outcome
from torchlint.runtime.report.html_kit import e
from torchlint.runtime.report.text import counts, probe_results, status_of, write_json
from torchlint.runtime.report.sections import RunSection

SEVERITY_COLORS = {"error": "#d64545", "warning": "#d98a00", "info": "#3b82c4"}

CSS = """
*{box-sizing:border-box}body{margin:0;font:14px/1.45 -apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
color:#1d2433;background:#f3f5f9}header{background:#161b2e;color:#fff;padding:22px 36px}
header h1{margin:0 0 4px;font-size:20px;font-weight:600}header h1 span{color:#8fa8ff}header p{margin:0;color:#b8c1d9}
main{max-width:1180px;margin:0 auto;padding:20px 28px 40px}
.cards{display:grid;grid-template-columns:repeat(4,1fr);gap:14px;margin-bottom:18px}
.card{background:#fff;border-radius:10px;padding:14px 16px;box-shadow:0 1px 3px rgba(20,30,60,.08)}
.card .k{color:#6b7489;font-size:12px;text-transform:uppercase;letter-spacing:.04em}.card .v{font-size:24px;font-weight:600;margin-top:2px}
.card .s{color:#6b7489;font-size:12px}
section{background:#fff;border-radius:10px;padding:18px 20px;margin-bottom:18px;box-shadow:0 1px 3px rgba(20,30,60,.08)}
section h2{margin:0 0 12px;font-size:16px}h3{font-size:13px;margin:16px 0 6px;color:#3a4356}
.finding{border-left:4px solid #ccc;padding:8px 12px;margin:10px 0;background:#fafbfd;border-radius:0 6px 6px 0}
.finding .head{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12.5px;color:#3a4356}
.finding .msg{margin:4px 0 6px}.pill{display:inline-block;border-radius:10px;padding:0 8px;font-size:11.5px;color:#fff;margin-right:6px}
.status{display:inline-block;border:1px solid #c8cfdc;border-radius:10px;padding:0 7px;font-size:11.5px;color:#4a5368;margin-right:6px}
pre.src{margin:4px 0 0;background:#1e2233;color:#d8dcea;border-radius:6px;padding:8px 0;font-size:12px;overflow:auto}
pre.src span{display:block;padding:0 12px}pre.src span.hl{background:#3a3f5c;color:#fff}pre.src i{color:#6f7792;font-style:normal;display:inline-block;width:42px}
table{border-collapse:collapse;width:100%;font-size:12.5px}th{text-align:left;color:#6b7489;font-weight:600;border-bottom:1px solid #e3e7ef;padding:5px 8px}
td{border-bottom:1px solid #eef1f6;padding:5px 8px;vertical-align:top}td.n{text-align:right;font-variant-numeric:tabular-nums}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
.ladder{display:flex;gap:10px;align-items:center;flex-wrap:wrap}.rung{border-radius:8px;padding:8px 12px;min-width:150px;border:1px solid #dde2ec}
.rung.ok{background:#eefaf3;border-color:#9fdcbc}.rung.failed{background:#fdeeee;border-color:#efaaaa}.rung.skipped{background:#f4f5f8;color:#8a93a6}
.rung b{display:block}.arrow{color:#9aa3b5;font-size:18px}.legend span{display:inline-block;margin-right:14px;font-size:12px;color:#4a5368}
.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;vertical-align:-1px}
.grid2{display:grid;grid-template-columns:1fr 1fr;gap:18px}.muted{color:#6b7489}.ok{color:#1f8a57}.bad{color:#c23b3b}
svg text{font-family:-apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
"""


# -- charts ---------------------------------------------------------------------------------------


# -- sections -------------------------------------------------------------------------------------

def snippet(path: str, line: int, context: int = 2, cell: int | None = None) -> str:
    if not path or not line or not os.path.isfile(path):
        return ""
    lines = _cell_lines(path, cell) if cell is not None else None
    rows = []
    for number in range(max(1, line - context), line + context + 1):
        if lines is not None:
            text = lines[number - 1] if number <= len(lines) else ""
        else:
            text = linecache.getline(path, number)
        if not text and number > line:
            break
        cls = ' class="hl"' if number == line else ""
        rows.append(f"<span{cls}><i>{number}</i>{e(text.rstrip())}</span>")
    return f'<pre class="src">{"".join(rows)}</pre>' if rows else ""


def _cell_lines(path: str, cell: int) -> list[str]:
    """The lines of a notebook's cell: a notebook finding's line counts in its cell."""
    from torchlint.notebook import Notebook, NotebookError

    try:
        return Notebook.parse(Path(path).read_bytes()).cell_lines(cell)
    except (OSError, NotebookError):
        return []


def findings_section(findings: list[Finding], cwd: Path) -> str:
    if not findings:
        return '<section><h2>Findings</h2><p class="ok">No findings.</p></section>'
    items = []
    for finding in findings:
        severity = getattr(finding.severity, "value", str(finding.severity))
        status = status_of(finding)
        path = finding.path if os.path.isabs(finding.path) else str(cwd / finding.path)
        evidence = finding.evidence[0] if finding.evidence else None
        where = f"cell {finding.cell}:{finding.location.line}" if finding.cell is not None else str(finding.location.line)
        extra = ""
        data = evidence.data if evidence else {}
        if status not in ("runtime only",) and evidence and evidence.detail:
            extra += f'<div class="muted">evidence: {e(evidence.detail)}</div>'
        for hint in (data.get("hints") or [])[1:3]:
            extra += f'<div class="muted">hint: {e(hint)}</div>'
        if data.get("explanation"):
            extra += f'<div class="muted">{e(data["explanation"])}</div>'
        items.append(
            f'<div class="finding" style="border-color:{SEVERITY_COLORS.get(severity, "#999")}">'
            f'<div class="head"><span class="pill" style="background:{SEVERITY_COLORS.get(severity, "#999")}">{e(finding.code)}</span>'
            f'<span class="status">{e(status)}</span>{e(finding.path)}:{where} · {e(finding.name)}</div>'
            f'<div class="msg">{e(finding.message)}</div>{extra}{snippet(path, finding.location.line, cell=finding.cell)}</div>')
    return f'<section><h2>Findings ({len(findings)})</h2>{"".join(items)}</section>'


def render(*, findings: list[Finding], outcome: Outcome, header: str, sections: list[RunSection], cwd: Path) -> str:
    tally = counts(findings)
    severities = {"error": 0, "warning": 0, "info": 0}
    for finding in findings:
        severities[getattr(finding.severity, "value", str(finding.severity))] = severities.get(
            getattr(finding.severity, "value", str(finding.severity)), 0) + 1
    cards = [("findings", str(len(findings)), f'{severities["error"]} error · {severities["warning"]} warning · {severities["info"]} info'),
             ("confirmed", str(tally.get("confirmed", 0)), f'{tally.get("runtime only", 0)} runtime only')]
    cards += [card for section in sections for card in section.cards]
    while len(cards) < 4:
        cards.append(("run", f"{outcome.seconds:g} s", outcome.status))
    card_html = "".join(f'<div class="card"><div class="k">{e(k)}</div><div class="v">{e(v)}</div><div class="s">{e(s)}</div></div>'
                        for k, v, s in cards[:4])
    body = [f'<div class="cards">{card_html}</div>', findings_section(findings, cwd)]
    body += [section.html for section in sections if section.html]
    title = " ".join([header.replace("torchlint run ", ""), *(section.flag for section in sections if section.flag)])
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width\"><title>torchlint · {e(title)}</title><style>{CSS}</style></head>"
            f"<body><header><h1><span>torchlint</span> run {e(title)}</h1><p>{e(outcome.summary)} ({outcome.seconds:g} s)</p></header>"
            f"<main>{''.join(body)}</main></body></html>\n")


def write_report_dir(directory: Path, *, findings: list[Finding], outcome: Outcome, header: str, results: dict[str, Any],
                     sections: list[RunSection], target: dict[str, Any], cwd: Path) -> Path:
    directory = directory if directory.is_absolute() else cwd / directory
    directory.mkdir(parents=True, exist_ok=True)
    buffer = io.StringIO()
    write_json(findings, outcome, target, buffer)
    document = json.loads(buffer.getvalue())
    document.update(probe_results(document, results))
    (directory / "findings.json").write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    page = directory / "report.html"
    page.write_text(render(findings=findings, outcome=outcome, header=header, sections=sections, cwd=cwd), encoding="utf-8")
    return page
