"""The non-finite probe's part of the run report, from the summary it published (torch-free)."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any


def _where(at: Any, cwd: Path) -> str:
    if not (isinstance(at, list) and len(at) == 2):
        return "?"
    path, line = at
    try:
        shown = os.path.relpath(path, cwd)
        if shown.startswith(".."):
            shown = path
    except ValueError:
        shown = path
    return f"{shown}:{line}"


def lines(result: dict, cwd: Path) -> list[str]:
    if not result.get("values_computed", True):
        return ["non-finite values", "  not checked: this device mode computes no values"]
    checked = result.get("checked") or {}
    counts = ", ".join(f"{checked.get(key, 0)} {key}" for key in ("model outputs", "losses", "backward passes"))
    replays = result.get("replays", 0)
    text = ["non-finite values", f"  checked: {counts}; {replays} replay{'s' * (replays != 1)}"]
    found = result.get("found") or []
    if not found:
        text.append("  no NaN/Inf reached a loss, a model's output or a gradient")
    for entry in found:
        what = "forward" if entry.get("code") == "TL735" else "gradient"
        text.append(f"  {entry.get('code')} {what}: `{entry.get('op') or '?'}` at {_where(entry.get('at'), cwd)}, step {entry.get('step')}")
    return text


def section(result: dict, cwd: Path) -> Any:
    try:
        from torchlint.runtime.sections import RunSection
    except ImportError:  # an engine without report sections
        return None
    text = lines(result, cwd)
    items = "".join(f"<li>{html.escape(line.strip())}</li>" for line in text[1:])
    found = result.get("found") or []
    card = ("non-finite", f"{len(found)} found" if found else "none", "first NaN/Inf by operation (TL735, TL736)")
    return RunSection(
        title="non-finite",
        text=text,
        html=f"<section><h2>{html.escape('non-finite values')}</h2><ul>{items}</ul></section>",
        cards=(card,),
    )
