"""Terminal sections of `torchlint run --compile/--profile`: the ladder, speed, hot paths.

Parent side: plain data from the child's ``compile-result`` and ``profile-result`` events.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

from torchlint.runtime.matching import display_path


def fmt_flops(value: float) -> str:
    for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:g} FLOP"


def where(path: str | None, line: int | None, cwd: Path) -> str:
    if not path:
        return "?"
    return f"{display_path(path, cwd)}:{line}" if line else display_path(path, cwd)


def compile_lines(result: dict[str, Any], cwd: Path) -> list[str]:
    ladder = " -> ".join(result.get("ladder", ()))
    out = [f"compile ({ladder})" + (f": {result['model']}{result.get('inputs', '')}" if result.get("model") else "")]
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
    speed = result.get("speed")
    if speed:
        breakeven = f"; pays off after {speed['breakeven_calls']} calls" if speed.get("breakeven_calls") else ""
        out.append(f"  speed ({speed['backend']}, {speed['mode']}): eager {speed['eager_ms']:.3f} ms, compiled "
                   f"{speed['compiled_ms']:.3f} ms per call (median): {speed['speedup']:.2f}x; compile {speed['compile_s']:.2f} s{breakeven}")
    return out


def profile_lines(result: dict[str, Any], cwd: Path, top: int = 8) -> list[str]:
    unit = result.get("step_unit", "step")
    out = []
    if result.get("skipped"):
        out.append(f"profile: skipped: {result['skipped']}")
    if "step_ms" in result:
        split = result.get("split_ms", {})
        out.append(f"profile: {result.get('profiled_steps')} {unit}s after {result.get('warmup')} warm-up; "
                   f"{result['step_ms']:.2f} ms per {unit}: forward {split.get('forward', 0):.2f}, backward "
                   f"{split.get('backward', 0):.2f}, optimizer {split.get('optimizer', 0):.2f}, other {split.get('other', 0):.2f}")
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


def write_sections(results: dict[str, Any], stream: TextIO, cwd: Path) -> None:
    if "compile" in results:
        stream.write("\n" + "\n".join(compile_lines(results["compile"], cwd)) + "\n")
    if "profile" in results:
        stream.write("\n" + "\n".join(profile_lines(results["profile"], cwd)) + "\n")
