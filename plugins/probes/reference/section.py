"""The reference probe's report section (parent side, no torch): what was recorded or
compared, and each relation the run broke."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchlint.runtime.html_kit import e
from torchlint.runtime.sections import RunSection, where


def reference_section(result: dict[str, Any], cwd: Path) -> RunSection:
    lines = ["reference"]
    cards = []
    if result.get("reference"):
        source = result.get("recorded_from") or {}
        origin = ", ".join(f"{key} {source[key]}" for key in ("script", "torch", "device") if source.get(key))
        broken = result.get("broken") or ()
        lines.append(f"  checked against {result['reference']}" + (f" ({origin})" if origin else "") +
                     f": {result.get('compared', 0)} recorded step(s) compared, {result.get('relations', 0)} relation(s), "
                     f"{len(broken)} broken")
        for item in broken:
            at = where(item["at"][0], item["at"][1], cwd) if item.get("at") else "?"
            lines.append(f"    step {item['step']}  {at}  {item['code']}  {item['message']}")
        cards.append(("reference", f"{len(broken)} broken", f"{result.get('relations', 0)} relations, {result.get('compared', 0)} steps"))
    if result.get("save_path"):
        if result.get("saved"):
            lines.append(f"  recorded {result.get('recorded', 0)} step(s), up to step {result.get('last_step', 0)}, to {result['saved']}")
        else:
            lines.append(f"  no reference written to {result['save_path']}: {result.get('not_saved') or 'nothing recorded'}")
    html = ["<section id=\"reference\"><h2>Reference</h2><ul>"]
    html += [f"<li>{e(line.strip())}</li>" for line in lines[1:]]
    html.append("</ul></section>")
    return RunSection(title="reference", text=lines, html="".join(html), cards=tuple(cards))
