"""`torchlint run --report DIR`: report.html (self-contained: inline CSS and SVG, nothing
fetched), findings.json, and the trace.json the profile probe exported.

Parent side; reads the user's source files only to show snippets around findings.
"""

from __future__ import annotations

import html
import io
import json
import linecache
import os
from pathlib import Path
from typing import Any, Iterable

from torchlint.findings import Finding
from torchlint.runtime.matching import Outcome, display_path
from torchlint.runtime.profile_summary import fmt_flops
from torchlint.runtime.report import counts, status_of, write_json

COLORS = {"forward": "#4f7cff", "backward": "#f08c3a", "optimizer": "#2fb67c", "other": "#b9c0cc",
          "eager": "#8a94a6", "compiled": "#4f7cff", "flops": "#8e6cf0"}
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


def e(text: Any) -> str:
    return html.escape(str(text), quote=True)


# -- charts ---------------------------------------------------------------------------------------

def stacked_bars(rows: list[tuple[str, list[tuple[str, float]], str]], *, width: int = 1080, label_width: int = 360,
                 unit: str = "ms", bar: int = 18, gap: int = 8) -> str:
    """Horizontal stacked bars: rows of (label, [(series, value)], right-hand note)."""
    if not rows:
        return '<p class="muted">nothing to show</p>'
    top = max(sum(v for _, v in parts) for _, parts, _ in rows) or 1.0
    plot = width - label_width - 110
    height = len(rows) * (bar + gap) + gap
    out = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">']
    for index, (label, parts, note) in enumerate(rows):
        y = gap + index * (bar + gap)
        out.append(f'<text x="{label_width - 8}" y="{y + bar - 5}" text-anchor="end" font-size="12" fill="#2c3447">{e(_clip(label, 58))}</text>')
        x = float(label_width)
        out.append(f'<rect x="{label_width}" y="{y}" width="{plot}" height="{bar}" fill="#f1f3f8" rx="3"/>')
        for series, value in parts:
            w = plot * value / top
            if w <= 0:
                continue
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{max(w, 1):.1f}" height="{bar}" fill="{COLORS.get(series, "#4f7cff")}" rx="2">'
                       f'<title>{e(series)}: {value:.3f} {e(unit)}</title></rect>')
            x += w
        out.append(f'<text x="{x + 6:.1f}" y="{y + bar - 5}" font-size="11.5" fill="#4a5368">{e(note)}</text>')
    out.append("</svg>")
    return "".join(out)


def split_bar(split: dict[str, float], *, width: int = 1080) -> str:
    total = sum(split.values()) or 1.0
    out = [f'<svg width="{width}" height="34" viewBox="0 0 {width} 34" role="img">']
    x = 0.0
    for series in ("forward", "backward", "optimizer", "other"):
        value = split.get(series, 0.0)
        w = width * value / total
        if w <= 0:
            continue
        out.append(f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="34" fill="{COLORS[series]}"><title>{series}: {value:.3f} ms</title></rect>')
        if w > 70:
            out.append(f'<text x="{x + 8:.1f}" y="22" font-size="12.5" fill="#fff" font-weight="600">{series} {value / total:.0%}</text>')
        x += w
    out.append("</svg>")
    return "".join(out)


def legend(series: Iterable[str]) -> str:
    return '<div class="legend">' + "".join(f'<span><i style="background:{COLORS[s]}"></i>{e(s)}</span>' for s in series) + "</div>"


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


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


def compile_section(result: dict[str, Any], cwd: Path) -> str:
    parts = [f'<section><h2>torch.compile</h2><p class="muted">{e(result.get("model") or "")}{e(result.get("inputs", ""))} · '
             f'ladder {e(" → ".join(result.get("ladder", ())))}</p>']
    if result.get("skipped"):
        parts.append(f'<p>Skipped: {e(result["skipped"])}</p></section>')
        return "".join(parts)
    rungs = {r["backend"]: r for r in result.get("rungs", ())}
    chips = []
    for backend in result.get("ladder", ()):
        rung = rungs.get(backend)
        stage = {"eager": "Dynamo", "aot_eager": "AOTAutograd", "inductor": "Inductor"}[backend]
        if rung is None:
            chips.append(f'<div class="rung skipped"><b>{e(backend)}</b>{stage} · not tried</div>')
        elif rung["status"] == "ok":
            chips.append(f'<div class="rung ok"><b>{e(backend)} ✓</b>{stage} · first call {rung.get("first_call_s", 0):.2f} s</div>')
        else:
            at = f' at {e(display_path(rung["at"][0], cwd))}:{rung["at"][1]}' if rung.get("at") else ""
            chips.append(f'<div class="rung failed"><b>{e(backend)} ✗</b>failed in {stage}{at}<br><span class="mono">{e(_clip(rung["error"] + ": " + rung["message"], 120))}</span></div>')
    parts.append('<div class="ladder">' + '<span class="arrow">→</span>'.join(chips) + "</div>")
    speed = result.get("speed")
    accuracy = result.get("accuracy")
    cols = []
    if speed:
        chart = stacked_bars([("eager", [("eager", speed["eager_ms"])], f'{speed["eager_ms"]:.3f} ms'),
                              (f'compiled ({speed["backend"]})', [("compiled", speed["compiled_ms"])], f'{speed["compiled_ms"]:.3f} ms')],
                             width=540, label_width=130)
        pay = f', pays off after {speed["breakeven_calls"]} calls' if speed.get("breakeven_calls") else ""
        cols.append(f'<div><h3>Speed: {speed["speedup"]:.2f}× ({e(speed["mode"])}, median per call)</h3>{chart}'
                    f'<p class="muted">compile time {speed["compile_s"]:.2f} s{pay}</p></div>')
    if accuracy:
        verdict = '<b class="ok">matches eager</b>' if accuracy.get("ok") else '<b class="bad">differs from eager</b>'
        numbers = (f'max abs error {accuracy["max_abs"]:.2e}, max rel error {accuracy["max_rel"]:.2e}; tolerance '
                   f'rtol={accuracy.get("rtol", 0):g}, atol={accuracy.get("atol", 0):g} ({e(accuracy.get("dtype", ""))})'
                   if "max_abs" in accuracy else e(accuracy.get("detail", "")))
        cols.append(f'<div><h3>Accuracy (backend {e(accuracy.get("backend"))} vs eager, eval mode, same seed)</h3>'
                    f'<p>{verdict}: {numbers}</p></div>')
    if cols:
        parts.append(f'<div class="grid2">{"".join(cols)}</div>')
    breaks = result.get("graph_breaks", ())
    parts.append(f'<h3>Graph breaks: {len(breaks)}</h3>')
    if breaks:
        rows = "".join(f'<tr><td class="mono">{e(display_path(b["path"], cwd))}:{b["line"]}</td><td>{e(b["reason"])}'
                       f'{"<br><span class=muted>hint: " + e(b["hints"][0]) + "</span>" if b.get("hints") else ""}</td>'
                       f'<td class="mono">{e(b.get("ref") or "")}</td><td class="n">{b.get("count", 1)}</td></tr>' for b in breaks)
        parts.append(f'<table><tr><th>line</th><th>reason</th><th>ref</th><th>count</th></tr>{rows}</table>')
    recompiles = result.get("recompilations", ())
    if recompiles:
        rows = "".join(f'<tr><td class="mono">{e(display_path(r["path"], cwd))}:{r["line"]}</td><td class="mono">{e(r["function"])}</td>'
                       f'<td>{e("; ".join(r["reasons"][:2]))}</td><td class="n">{r["count"]}</td></tr>' for r in recompiles)
        parts.append(f'<h3>Recompilations</h3><table><tr><th>where</th><th>function</th><th>guard that failed</th><th>count</th></tr>{rows}</table>')
    parts.append("</section>")
    return "".join(parts)


def profile_section(result: dict[str, Any], cwd: Path) -> str:
    parts = ['<section><h2>Profile</h2>']
    unit = result.get("step_unit", "step")
    if result.get("skipped"):
        parts.append(f'<p class="muted">Timing skipped: {e(result["skipped"])}</p>')
    if "step_ms" in result:
        split = result.get("split_ms", {})
        parts.append(f'<p class="muted">{result.get("profiled_steps")} {e(unit)}s profiled after {result.get("warmup")} warm-up; '
                     f'times are per {e(unit)}. Open <code>trace.json</code> in ui.perfetto.dev for the timeline.</p>')
        parts.append(f'<h3>Time split: {result["step_ms"]:.2f} ms per {e(unit)}</h3>{split_bar(split)}')
        parts.append(legend(("forward", "backward", "optimizer", "other")))
        lines = [r for r in result.get("lines", ()) if r.get("path")][:12]
        rows = [(f'{display_path(r["path"], cwd)}:{r["line"]}  {r.get("source", "")}',
                 [("forward", r["forward_ms"]), ("backward", r["backward_ms"])], f'{r["total_ms"]:.2f} ms') for r in lines]
        parts.append(f'<h3>Hot lines (forward + the backward of their operations)</h3>{stacked_bars(rows)}')
        modules = [m for m in result.get("modules", ()) if m["path"]][:12]
        rows = [(m["path"], [("forward", m["forward_ms"]), ("backward", m["backward_ms"])], f'{m["total_ms"]:.2f} ms') for m in modules]
        parts.append(f'<h3>Hot modules (inclusive)</h3>{stacked_bars(rows)}')
        ops = result.get("ops", ())[:12]
        if ops:
            body = "".join(f'<tr><td class="mono">{e(o["name"])}</td><td class="n">{o["self_ms"]:.3f}</td><td class="n">{o["total_ms"]:.3f}</td>'
                           f'<td class="n">{o["calls_per_step"]:g}</td><td class="mono">{e(o.get("shapes", ""))}</td></tr>' for o in ops)
            parts.append(f'<h3>Operations by self time</h3><table><tr><th>op</th><th>self ms</th><th>total ms</th><th>calls</th>'
                         f'<th>input shapes</th></tr>{body}</table>')
    flops = result.get("flops")
    if flops:
        rows = [(r["path"], [("flops", r["flops"])], fmt_flops(r["flops"])) for r in flops["modules"][:12]]
        parts.append(f'<h3>FLOPs per module: {fmt_flops(flops["forward_total"])} per forward ({e(flops.get("note", ""))})</h3>'
                     f'{stacked_bars(rows, unit="FLOP")}')
    parts.append("</section>")
    return "".join(parts)


def render(*, findings: list[Finding], outcome: Outcome, header: str, results: dict[str, Any], cwd: Path) -> str:
    tally = counts(findings)
    severities = {"error": 0, "warning": 0, "info": 0}
    for finding in findings:
        severities[getattr(finding.severity, "value", str(finding.severity))] = severities.get(
            getattr(finding.severity, "value", str(finding.severity)), 0) + 1
    cards = [("findings", str(len(findings)), f'{severities["error"]} error · {severities["warning"]} warning · {severities["info"]} info'),
             ("confirmed", str(tally.get("confirmed", 0)), f'{tally.get("runtime only", 0)} runtime only')]
    compile_result = results.get("compile") or {}
    speed = compile_result.get("speed")
    if compile_result:
        breaks = compile_result.get("graph_breaks", ())
        cards.append(("torch.compile", f'{speed["speedup"]:.2f}×' if speed else ("failed" if compile_result.get("failure") else "—"),
                      f'{len(breaks)} graph break place{"s" * (len(breaks) != 1)}'))
    profile = results.get("profile") or {}
    if "step_ms" in profile:
        cards.append(("per " + profile.get("step_unit", "step"), f'{profile["step_ms"]:.1f} ms',
                      f'forward {profile["split_ms"]["forward"]:.1f} · backward {profile["split_ms"]["backward"]:.1f}'))
    elif profile.get("flops"):
        cards.append(("FLOPs / forward", fmt_flops(profile["flops"]["forward_total"]), "FlopCounterMode"))
    while len(cards) < 4:
        cards.append(("run", f"{outcome.seconds:g} s", outcome.status))
    card_html = "".join(f'<div class="card"><div class="k">{e(k)}</div><div class="v">{e(v)}</div><div class="s">{e(s)}</div></div>'
                        for k, v, s in cards[:4])
    body = [f'<div class="cards">{card_html}</div>', findings_section(findings, cwd)]
    if compile_result:
        body.append(compile_section(compile_result, cwd))
    if profile:
        body.append(profile_section(profile, cwd))
    title = header.replace("torchlint run ", "")
    if compile_result:
        title += f' --compile={compile_result.get("backend", "")}'
    if profile:
        title += " --profile"
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width\"><title>torchlint · {e(title)}</title><style>{CSS}</style></head>"
            f"<body><header><h1><span>torchlint</span> run {e(title)}</h1><p>{e(outcome.summary)} ({outcome.seconds:g} s)</p></header>"
            f"<main>{''.join(body)}</main></body></html>\n")


def write_report_dir(directory: Path, *, findings: list[Finding], outcome: Outcome, header: str, results: dict[str, Any],
                     target: dict[str, Any], cwd: Path) -> Path:
    directory = directory if directory.is_absolute() else cwd / directory
    directory.mkdir(parents=True, exist_ok=True)
    buffer = io.StringIO()
    write_json(findings, outcome, target, buffer)
    document = json.loads(buffer.getvalue())
    document.update(results)
    (directory / "findings.json").write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    page = directory / "report.html"
    page.write_text(render(findings=findings, outcome=outcome, header=header, results=results, cwd=cwd), encoding="utf-8")
    return page
