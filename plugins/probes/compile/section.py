"""The compile probe's report section: the backend ladder, graph breaks, accuracy and speed.

Parent side, no torch: plain data the probe published (``ctx.publish``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchlint.probe import RunSection, clip, display_path, e, minify_html, minify_lines, stacked_bars, where


def section(result: dict[str, Any], cwd: Path) -> RunSection:
    speed = result.get("speed")
    breaks = result.get("graph_breaks", ())
    card = ("torch.compile", f'{speed["speedup"]:.2f}×' if speed else ("failed" if result.get("failure") else "—"),
            f'{len(breaks)} graph break place{"s" * (len(breaks) != 1)}')
    return RunSection(title="compile", text=compile_lines(result, cwd), html=compile_html(result, cwd), cards=(card,),
                      flag=f'--compile={result.get("backend", "")}')


def compile_lines(result: dict[str, Any], cwd: Path) -> list[str]:
    ladder = " -> ".join(result.get("ladder", ()))
    out = [f"compile ({ladder})" + (f": {result['model']}{result.get('inputs', '')}" if result.get("model") else "")]
    if result.get("compiled_at"):  # one of the program's own torch.compile calls
        out[0] += f", compiled by the program at {where(*result['compiled_at'], cwd)} (backend {result.get('program_backend')})"
    if result.get("skipped"):
        out.append(f"  skipped: {result['skipped']}")
    for rung in result.get("rungs", ()):
        if rung["status"] == "ok":
            frames = rung.get("frames")
            graphs = f", {frames} frame compile{'s' * (frames != 1)}" if frames is not None else ""
            out.append(f"  {rung['backend']:<10} ok      first call {rung.get('first_call_s', rung.get('seconds', 0)):.2f} s{graphs}")
        else:
            at = f" at {where(*rung['at'], cwd)}" if rung.get("at") else ""
            out.append(f"  {rung['backend']:<10} FAILED  in {rung['stage']}{at}: {rung['error']}: {rung['message'][:160]}")
    breaks = result.get("graph_breaks", ())
    if result.get("rungs") or breaks:
        total = sum(b.get("count", 1) for b in breaks)
        out.append(f"  graph breaks: {len(breaks)} place{'s' * (len(breaks) != 1)}, {total} break{'s' * (total != 1)}"
                   + "".join(f"\n    {where(b['path'], b['line'], cwd)}  {b['reason'][:90]}" + (f" [{b['ref']}]" if b.get("ref") else "")
                             + (f" x{b['count']}" if b.get("count", 1) > 1 else "") for b in breaks))
        for rc in result.get("recompilations", ()):
            out.append(f"  recompiled {rc['function']} ({where(rc['path'], rc['line'], cwd)}) {rc['count']}x: {'; '.join(rc['reasons'][:1])}")
    accuracy = result.get("accuracy")
    if accuracy:
        verdict = "matches" if accuracy.get("ok") else "DIFFERS"
        tol = f"rtol={accuracy['rtol']:g}, atol={accuracy['atol']:g}" if "rtol" in accuracy else ""
        errors = (f"max abs {accuracy['max_abs']:.2e}, max rel {accuracy['max_rel']:.2e}" if "max_abs" in accuracy
                  else accuracy.get("detail", ""))
        out.append(f"  accuracy (backend {accuracy.get('backend')} vs eager, eval mode): {verdict}: {errors}"
                   + (f" ({accuracy.get('dtype')}, {tol})" if tol else ""))
    if result.get("minify"):  # --minify: the failing graph, shrunk, and the debug dump
        out.extend(minify_lines(result["minify"], cwd))
    speed = result.get("speed")
    if speed:
        breakeven = f"; pays off after {speed['breakeven_calls']} calls" if speed.get("breakeven_calls") else ""
        out.append(f"  speed ({speed['backend']}, {speed['mode']}): eager {speed['eager_ms']:.3f} ms, compiled "
                   f"{speed['compiled_ms']:.3f} ms per call (median): {speed['speedup']:.2f}x; compile {speed['compile_s']:.2f} s{breakeven}")
    for more in result.get("more", ()):  # the program's other compiled callables
        out.extend(compile_lines(more, cwd))
    if result.get("not_checked"):
        out.append(f"  also compiled, not checked: {', '.join(result['not_checked'])}")
    return out


def compile_html(result: dict[str, Any], cwd: Path) -> str:
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
            chips.append(f'<div class="rung failed"><b>{e(backend)} ✗</b>failed in {stage}{at}<br><span class="mono">{e(clip(rung["error"] + ": " + rung["message"], 120))}</span></div>')
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
    if result.get("minify"):
        parts.append(minify_html(result["minify"], cwd))
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
    return "".join(parts) + "".join(compile_html(more, cwd) for more in result.get("more", ()))
