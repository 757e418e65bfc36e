"""The reference probe's report section (parent side, no torch): what was recorded, what was
compared and how many relations broke (the findings themselves are in the report above it;
the HTML section lists them by step)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchlint.probe import RunSection, e, where


def reference_section(result: dict[str, Any], cwd: Path) -> RunSection:
    lines = ["reference"]
    cards = []
    broken = result.get("broken") or ()
    if result.get("reference"):
        source = result.get("recorded_from") or {}
        origin = ", ".join(([source["script"]] if source.get("script") else [])
                           + [f"{key} {source[key]}" for key in ("torch", "device") if source.get(key)])
        lines.append(f"  checked against {where(result['reference'], None, cwd)}" + (f" (recorded from {origin})" if origin else "") +
                     f": {result.get('compared', 0)} recorded step(s) compared, {result.get('relations', 0)} relation(s), "
                     f"{len(broken)} broken")
        cards.append(("reference", f"{len(broken)} broken", f"{result.get('relations', 0)} relations, {result.get('compared', 0)} steps"))
    if result.get("save_path"):
        if result.get("saved"):
            lines.append(f"  recorded {result.get('recorded', 0)} step(s), up to step {result.get('last_step', 0)}, to "
                         f"{where(result['saved'], None, cwd)}")
        else:
            lines.append(f"  no reference written to {where(result['save_path'], None, cwd)}: {result.get('not_saved') or 'nothing recorded'}")
    html = ["<section id=\"reference\"><h2>Reference</h2><ul>"]
    html += [f"<li>{e(line.strip())}</li>" for line in lines[1:]]
    html.append("</ul>")
    if broken:
        rows = "".join(f"<tr><td class=\"n\">{e(item['step'])}</td><td>{e(where(item['at'][0], item['at'][1], cwd) if item.get('at') else '?')}</td>"
                       f"<td>{e(item['code'])}</td><td>{e(item['message'])}</td></tr>" for item in broken)
        html.append(f"<table><tr><th>step</th><th>line</th><th>code</th><th>relation broken</th></tr>{rows}</table>")
    html.append("</section>")
    return RunSection(title="reference", text=lines, html="".join(html), cards=tuple(cards))
