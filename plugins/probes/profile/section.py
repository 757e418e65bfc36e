"""The profile probe's report section: time split, hot lines and modules, FLOPs.

Parent side, no torch: plain data the probe published (``ctx.publish``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchlint.probe import RunSection, display_path, e, legend, split_bar, stacked_bars, where


def section(result: dict[str, Any], cwd: Path) -> RunSection:
    cards = ()
    if "step_ms" in result:
        cards = (("per " + result.get("step_unit", "step"), f'{result["step_ms"]:.1f} ms',
                  f'forward {result["split_ms"]["forward"]:.1f} · backward {result["split_ms"]["backward"]:.1f}'),)
    elif result.get("flops"):
        cards = (("FLOPs / forward", fmt_flops(result["flops"]["forward_total"]), "FlopCounterMode"),)
    return RunSection(title="profile", text=profile_lines(result, cwd), html=profile_html(result, cwd), cards=cards, flag="--profile")


def fmt_flops(value: float) -> str:
    for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:g} FLOP"


def profile_lines(result: dict[str, Any], cwd: Path, top: int = 8) -> list[str]:
    unit = result.get("step_unit", "step")
    out = []
    if result.get("skipped"):
        out.append(f"profile: skipped: {result['skipped']}")
    if "step_ms" in result:
        split = result.get("split_ms", {})
        out.append(f"profile: {result.get('profiled_steps')} {unit}s after {result.get('warmup')} warm-up; "
                   f"{result['step_ms']:.2f} ms per {unit}: forward {split.get('forward', 0):.2f}, backward "
                   f"{split.get('backward', 0):.2f}, optimizer {split.get('optimizer', 0):.2f}, other {split.get('other', 0):.2f}"
                   + (f", the other probes {result['probes_ms']:.2f}" if result.get("probes_ms") else ""))
        rows = [r for r in result.get("lines", ()) if r.get("path")][:top]
        if rows:
            width = max(len(where(r["path"], r["line"], cwd)) for r in rows)
            out.append(f"  {'hot lines':<{width}}  {'total ms':>8} {'fwd':>7} {'bwd':>7} {'calls':>5}  ops")
            for r in rows:
                ops = ", ".join(o.replace("aten::", "") for o in r["ops"][:3])
                out.append(f"  {where(r['path'], r['line'], cwd):<{width}}  {r['total_ms']:>8.3f} {r['forward_ms']:>7.3f} "
                           f"{r['backward_ms']:>7.3f} {r['calls_per_step']:>5g}  {ops}  | {r.get('source', '')[:60]}")
        modules = [m for m in result.get("modules", ()) if m["path"]][:top]
        if modules:
            width = max(len(m["path"]) for m in modules)
            out.append(f"  {'hot modules':<{width}}  {'total ms':>8} {'fwd':>7} {'self':>7} {'bwd':>7}")
            for m in modules:
                out.append(f"  {m['path']:<{width}}  {m['total_ms']:>8.3f} {m['forward_ms']:>7.3f} {m['self_forward_ms']:>7.3f} {m['backward_ms']:>7.3f}")
    flops = result.get("flops")
    if flops:
        rows = flops["modules"][:top]
        out.append(f"  FLOPs (forward, first call): {fmt_flops(flops['forward_total'])} in total; "
                   + ", ".join(f"{r['path']} {fmt_flops(r['flops'])}" for r in rows[1:6] or rows[:1]))
    if result.get("trace"):
        out.append(f"  trace: {display_path(result['trace'], cwd)} (open in https://ui.perfetto.dev or chrome://tracing)")
    if result.get("error"):
        out.append(f"  note: {result['error']}")
    return out


def profile_html(result: dict[str, Any], cwd: Path) -> str:
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
