"""The compiled profile's report section: eager next to compiled by function, line and kernel.

Parent side, no torch: plain data the probe published (``ctx.publish``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from torchlint.probe import RunSection, display_path, e, legend, paired_bars, stacked_bars, where


def section(result: dict[str, Any], cwd: Path) -> RunSection:
    cards = ()
    if result.get("speedup"):
        cards = (("compiled vs eager", f'{result["speedup"]:.2f}×',
                  f'{result["eager_ms"]:.3f} → {result["compiled_ms"]:.3f} ms per call (Inductor)'),)
    return RunSection(title="compiled-profile", text=compiled_lines(result, cwd), html=compiled_html(result, cwd), cards=cards)


def _ratio(row: dict[str, Any]) -> str:
    return f'{row["speedup"]:.2f}x' if row.get("speedup") else "—"


def _lines_of(kernel: dict[str, Any], cwd: Path) -> str:
    return ", ".join(f'{where(line["path"], line["line"], cwd)} ({line["ops"]} op{"s" * (line["ops"] != 1)})'
                     for line in kernel.get("lines", ())[:4])


def compiled_lines(result: dict[str, Any], cwd: Path, top: int = 8) -> list[str]:
    head = f"compiled profile (Inductor vs eager): {result.get('target', '')}{result.get('inputs', '')}"
    if result.get("skipped"):
        return [head, f"  skipped: {result['skipped']}"]
    if "speedup" not in result:
        return [head]
    out = [head,
           f"  per call ({result['mode']}, {result['threads']} thread{'s' * (result['threads'] != 1)}, median of "
           f"{result['timed_calls'][0]} alternating calls): eager {result['eager_ms']:.3f} ms, compiled {result['compiled_ms']:.3f} ms: "
           f"{result['speedup']:.2f}x"
           + ("" if result.get("regions_skipped") else
              f"; outside operations and kernels: eager {result['outside_ms']['eager']:.3f} ms, "
              f"compiled {result['outside_ms']['compiled']:.3f} ms")]
    if result.get("regions_skipped"):
        out.append(f"  lines and functions: not shown: {result['regions_skipped']}")
    functions = result.get("functions", ())[:top]
    if functions:
        names = [f"{row['function']} ({where(row['path'], row['line'], cwd)})" for row in functions]
        width = max(len(n) for n in names)
        out.append(f"  {'functions':<{width}}  {'eager ms':>8} {'compiled':>8} {'ratio':>7}  outside kernels (compiled regions)")
        for name, row in zip(names, functions):
            outside = row.get("compiled_outside_kernels_ms") or 0.0
            out.append(f"  {name:<{width}}  {row['eager_ms']:>8.3f} {row['compiled_ms']:>8.3f} {_ratio(row):>7}"
                       + (f"  +{outside:.3f} ms" if outside >= 0.0005 else ""))
    lines = result.get("lines", ())[:top]
    if lines:
        names = [where(row["path"], row["line"], cwd) for row in lines]
        width = max(len(n) for n in names)
        out.append(f"  {'lines':<{width}}  {'eager ms':>8} {'compiled':>8} {'ratio':>7}")
        for name, row in zip(names, lines):
            compiled = f"{row['compiled_ms']:>8.3f}" if row["compiled_ms"] is not None else f"{'eager':>8}"
            out.append(f"  {name:<{width}}  {row['eager_ms']:>8.3f} {compiled} {_ratio(row):>7}"
                       + (f"  ({row['compiled_as']})" if row.get("compiled_as") else ""))
    kernels = result.get("kernels", ())[:top]
    if kernels:
        out.append(f"  kernels ({result.get('kernel_count', len(kernels))} in {result.get('graphs', 0)} graph"
                   f"{'s' * (result.get('graphs', 0) != 1)}; "
                   + ("the lines they fused):" if result.get("regions_skipped") else
                      "ms per call, share of kernel time, the lines they fused):"))
        for kernel in kernels:
            timing = "" if result.get("regions_skipped") else f"  {kernel['ms']:.3f} ms  {kernel['share']:.0%}"
            out.append(f"    {kernel['name']}{timing}  {_lines_of(kernel, cwd)}")
    dump = result.get("debug_dump")
    if dump:
        out.append(f"  hottest graph: {', '.join(display_path(dump[k], cwd) for k in ('output_code', 'fx_graph_runnable') if dump.get(k))}")
    if result.get("note"):
        out.append(f"  note: {result['note']}")
    return out


def _link(path: str) -> str:
    """Relative to report.html when the dump sits next to it (``--report DIR`` puts it in
    ``DIR/compiled_graph``; without one it is a temporary folder), else a file URL."""
    folder = os.path.dirname(path)
    if os.path.basename(folder) == "compiled_graph":
        return f"compiled_graph/{quote(os.path.basename(path))}"
    return "file://" + quote(os.path.abspath(path))


def compiled_html(result: dict[str, Any], cwd: Path) -> str:
    parts = [f'<section id="compiled-profile"><h2>Compiled profile (Inductor vs eager)</h2><p class="muted">'
             f'{e(result.get("target", ""))}{e(result.get("inputs", ""))}</p>']
    if result.get("skipped") or "speedup" not in result:
        parts.append(f'<p class="muted">Skipped: {e(result.get("skipped", "no timing"))}</p></section>')
        return "".join(parts)
    parts.append(f'<h3>Per call: {result["speedup"]:.2f}× ({e(result["mode"])}, {result["threads"]} thread(s), median of '
                 f'{result["timed_calls"][0]} alternating calls after warm-up)</h3>')
    parts.append(paired_bars([("whole call", result["eager_ms"], result["compiled_ms"],
                               f'{result["eager_ms"]:.3f} → {result["compiled_ms"]:.3f} ms')]))
    parts.append(legend(("eager", "compiled")))
    if result.get("regions_skipped"):
        parts.append(f'<p class="muted">Lines and functions: not shown: {e(result["regions_skipped"])}</p>')
    slower = {(r["path"], r["line"], r["kind"]) for r in result.get("slower", ())}
    for kind, title in (("functions", "User functions"), ("lines", "User lines")):
        rows = result.get(kind, ())[:12]
        if not rows:
            continue
        label = (lambda r: f'{r["function"]}  {display_path(r["path"], cwd)}:{r["line"]}') if kind == "functions" else \
                (lambda r: f'{display_path(r["path"], cwd)}:{r["line"]}')
        parts.append(f'<h3>{title}: eager next to compiled (ms per call)</h3>')
        parts.append(paired_bars([(label(r), r["eager_ms"], r["compiled_ms"] or 0.0, r.get("compiled_as") or _ratio(r)) for r in rows]))
        body = "".join(
            f'<tr><td class="mono">{e(label(r))}</td><td class="n">{r["eager_ms"]:.3f}</td>'
            f'<td class="n">{e(format(r["compiled_ms"], ".3f") if r["compiled_ms"] is not None else r.get("compiled_as", ""))}</td>'
            f'<td class="n">{"<b class=bad>" if (r["path"], r["line"], kind[:-1]) in slower else ""}{e(_ratio(r))}</td></tr>'
            for r in rows)
        parts.append(f'<table><tr><th>{kind[:-1]}</th><th>eager ms</th><th>compiled ms</th><th>speed-up</th></tr>{body}</table>')
    kernels = result.get("kernels", ())[:12]
    if kernels:
        parts.append(f'<h3>Fused kernels: {result.get("kernel_count", len(kernels))} in {result.get("graphs", 0)} graph(s), '
                     f'by share of kernel time</h3>')
        if not result.get("regions_skipped"):
            parts.append(stacked_bars([(k["name"], [("compiled", k["ms"])], f'{k["share"]:.0%}') for k in kernels]))
        body = "".join(f'<tr><td class="mono">{e(k["name"])}</td><td class="n">{k["ms"]:.3f}</td><td class="n">{k["share"]:.0%}</td>'
                       f'<td class="mono">{e(_lines_of(k, cwd))}</td></tr>' for k in kernels)
        parts.append(f'<table><tr><th>kernel</th><th>ms per call</th><th>share</th><th>user lines it fused</th></tr>{body}</table>')
    dump = result.get("debug_dump")
    if dump:
        links = " · ".join(f'<a href="{e(_link(dump[k]))}">{name}</a>' for k, name in
                           (("output_code", "output_code.py"), ("fx_graph_runnable", "fx_graph_runnable.py")) if dump.get(k))
        parts.append(f'<p>Hottest graph ({e(dump.get("kind", ""))} graph {e(dump.get("graph"))}): {links}</p>')
    parts.append("</section>")
    return "".join(parts)
