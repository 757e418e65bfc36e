"""The words of an out-of-memory explanation (TL738), from plain facts (no torch): the probe
gathers the facts when the program dies, this module writes them down, and the facts go to
the JSON report as the finding's data."""

from __future__ import annotations

import os
from typing import Any

from .units import human_bytes

#: Lines and modules named in the message (the data holds more).
NAMED = 3


def oom_message(facts: dict[str, Any]) -> str:
    """``facts``: ``device`` (cuda, cpu, device), ``module`` and ``module_type`` (where it
    failed, or None), ``at`` (`train.py:12`), ``moment`` (`in step 3 (...)`), ``requested``,
    ``totals`` (the GPU's counters: allocated, reserved, free, total), ``saved`` (``live``:
    whether the bytes are held now, or were measured in the watched iterations; ``total``:
    held now, or the most held at once then; ``lines`` [{where, bytes}] and ``modules``
    [{module, bytes}]: held now, or the most one forward pass saved), ``snapshot`` (a
    ``summarize_snapshot`` result, or None) and ``state`` (parameters, gradients,
    optimizer_state)."""
    device = {"cuda": "CUDA", "cpu": "CPU"}.get(facts.get("device"), "Device")
    where = f" in `{facts['module']}` ({facts['module_type']})" if facts.get("module") else ""
    at = f" at {facts['at']}" if facts.get("at") else ""
    asked = f": it tried to allocate {facts['requested']}" if facts.get("requested") else ""
    parts = [f"{device} out of memory{where}{at}, {facts.get('moment', '')}{asked}"]
    totals = facts.get("totals") or {}
    if "allocated" in totals:
        free = f", {human_bytes(totals['free'])} free of {human_bytes(totals['total'])}" if "total" in totals else ""
        parts.append(f"{human_bytes(totals['allocated'])} allocated by tensors, {human_bytes(totals.get('reserved', 0))} reserved{free}")
    saved = facts.get("saved") or {}
    lines = saved.get("lines") or ()
    if lines:
        listed = ", ".join(f"{entry['where']} {human_bytes(entry['bytes'])}" for entry in lines[:NAMED])
        modules = ", ".join(f"`{entry['module']}` {human_bytes(entry['bytes'])}" for entry in (saved.get("modules") or ())[:NAMED])
        by_module = f"; by module {modules}" if modules else ""
        if saved.get("live"):
            parts.append(f"saved for backward and still held: {human_bytes(saved.get('total', 0))}, most by {listed}{by_module}")
        else:
            parts.append(f"in the first {saved.get('unit', 'step')}s at most {human_bytes(saved.get('total', 0))} was saved "
                         f"for backward at once; in one forward pass the most by {listed}{by_module}")
    snapshot = facts.get("snapshot") or {}
    if snapshot.get("lines"):
        listed = ", ".join(f"{os.path.basename(entry['path'])}:{entry['line']} {human_bytes(entry['bytes'])}"
                           for entry in snapshot["lines"][:NAMED])
        parts.append(f"live allocations by the line that made them: {listed}"
                     + (f" ({human_bytes(snapshot['unattributed'])} made outside the program's code)" if snapshot.get("unattributed") else ""))
    state = facts.get("state") or {}
    held = [f"{label} {human_bytes(state[key])}" for key, label in
            (("parameters", "parameters"), ("gradients", "gradients"), ("optimizer_state", "optimizer state")) if state.get(key)]
    if held:
        parts.append(", ".join(held))
    return "; ".join(parts)
