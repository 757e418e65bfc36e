"""The non-finite probe's report section: what it checked and where NaN/Inf first appeared.

Parent side, no torch: plain data the probe published (``ctx.publish``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchlint.probe import RunSection, e, where

CHECKED = ("model outputs", "losses", "backward passes")


def section(result: dict[str, Any], cwd: Path) -> RunSection:
    found = result.get("found") or []
    card = ("non-finite", f"{len(found)} found" if found else "none",
            "first NaN/Inf by operation" if result.get("values_computed", True) else "no values under this device")
    # The terminal report shows the section only when there is something to say: the
    # findings name the operations, this adds what was checked.
    return RunSection(title="nonfinite", text=lines(result, cwd) if found else (), html=html(result, cwd), cards=(card,))


def _found(entry: dict[str, Any], cwd: Path) -> str:
    at = entry.get("at") or [None, None]
    what = "forward" if entry.get("code") == "TL735" else "backward"
    return f"{entry.get('code')} {what}: `{entry.get('op') or '?'}` at {where(at[0], at[1], cwd)}, {entry.get('when')}"


def lines(result: dict[str, Any], cwd: Path) -> list[str]:
    if not result.get("values_computed", True):
        return ["non-finite values: not checked (this device mode computes no values)"]
    checked = result.get("checked") or {}
    counts = ", ".join(f"{checked.get(key, 0)} {key}" for key in CHECKED)
    replays = result.get("replays", 0)
    out = [f"non-finite values: checked {counts}; {replays} model call{'s' * (replays != 1)} replayed"]
    found = result.get("found") or []
    out.extend(f"  {_found(entry, cwd)}" for entry in found)
    if not found:
        out.append("  no NaN/Inf reached a loss, a model's output or a gradient")
    return out


def html(result: dict[str, Any], cwd: Path) -> str:
    text = lines(result, cwd)
    items = "".join(f"<li>{e(line.strip())}</li>" for line in text[1:])
    return f'<section><h2>Non-finite values</h2><p class="muted">{e(text[0])}</p><ul>{items}</ul></section>'
