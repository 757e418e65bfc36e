"""The memory probe's report section: memory after each watched iteration, and the modules
and user lines whose forward work autograd saved the most bytes for.

Parent side, no torch: plain data the probe published (``ctx.publish``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchlint.probe import e, stacked_bars, where

from .units import human_bytes


MIB = float(1 << 20)


def memory_section(result: dict[str, Any], cwd: Path) -> Any:
    """The HTML report always has the section (when anything was measured); the terminal
    report only when the probe reported a finding, which the figures then back."""
    from torchlint.probe import RunSection

    if not (result.get("iterations") or result.get("modules") or result.get("lines")):
        return None
    text = memory_lines(result, cwd) if result.get("findings") else []
    return RunSection(title="memory", text=text, html=memory_html(result, cwd), cards=memory_cards(result))


def _device(result: dict[str, Any]) -> str:
    return str(result.get("device") or "cpu")


def _label(row: dict[str, Any]) -> str:
    """`step 3` after an optimizer step, `model call 9` in a loop that only calls the model,
    `iteration 4` in a training loop without an optimizer (counted in calls of the model)."""
    kind = row.get("kind")
    if kind == "step":
        return f"step {row.get('steps', '?')}"
    return f"{'model call' if kind == 'forward' else 'iteration'} {row.get('forwards', '?')}"


def _counters(result: dict[str, Any]) -> list[tuple[str, str]]:
    """The device's own columns, where the run had them: (key, heading)."""
    rows = result.get("iterations") or ()
    columns = []
    if any("allocated" in row for row in rows):
        simulated = "simulated" in _device(result)
        columns.append(("allocated", "allocated (simulated)" if simulated else "allocated"))
    if any("max_allocated" in row for row in rows):
        columns.append(("max_allocated", "max allocated"))
    return columns


def memory_lines(result: dict[str, Any], cwd: Path) -> list[str]:
    watched = result.get("watched", 0)
    out = [f"memory ({_device(result)}: bytes autograd saved for backward, in the first {watched} iterations of each loop)"]
    rows = result.get("iterations") or ()
    counters = _counters(result)
    if rows:
        heading = f"  {'after':<16}{'peak saved':>12}{'still held':>13}{'from earlier':>15}" + "".join(f"{title:>24}" for _, title in counters)
        out.append(heading)
        for row in rows:
            line = (f"  {_label(row):<16}{human_bytes(row.get('peak', 0)):>12}{human_bytes(row.get('held', 0)):>13}"
                    f"{human_bytes(row.get('earlier', 0)):>15}")
            out.append(line + "".join(f"{human_bytes(row[key]) if key in row else '-':>24}" for key, _ in counters))
    else:
        out.append("  no optimizer step or repeated model call was seen: nothing to measure per iteration")
    modules = result.get("modules") or ()
    if modules:
        out.append("  per module, the most saved for backward in one forward pass:")
        for entry in modules:
            kind = f" ({entry['type']})" if entry.get("type") and entry["type"] != entry["module"] else ""
            out.append(f"    {human_bytes(entry['bytes']):>10}  {entry['module']}{kind}")
    lines = result.get("lines") or ()
    if lines:
        out.append("  per user line:")
        for entry in lines:
            source = f"  {entry['source']}" if entry.get("source") else ""
            out.append(f"    {human_bytes(entry['bytes']):>10}  {where(entry['path'], entry['line'], cwd)}{source}")
    return out


def memory_cards(result: dict[str, Any]) -> tuple[tuple[str, str, str], ...]:
    rows = result.get("iterations") or ()
    cards = [("saved for backward", human_bytes(result.get("peak_saved", 0)), "the most alive at once")]
    if rows:
        last = rows[-1]
        note = f"after {_label(last)}" + (f", {human_bytes(last['earlier'])} from earlier iterations" if last.get("earlier") else "")
        cards.append(("still held", human_bytes(last.get("held", 0)), note))
    return tuple(cards)


def memory_html(result: dict[str, Any], cwd: Path) -> str:
    watched = result.get("watched", 0)
    parts = [f'<section id="memory"><h2>Memory</h2><p class="muted">{e(_device(result))}: bytes autograd saved for '
             f"backward, in the first {e(watched)} iterations of each loop</p>"]
    rows = result.get("iterations") or ()
    counters = _counters(result)
    if rows:
        bars = [(_label(row), [("saved", row.get("peak", 0) / MIB)], human_bytes(row.get("peak", 0))) for row in rows]
        parts.append(f"<h3>The most saved for backward at once in each iteration</h3>{stacked_bars(bars, unit='MiB', label_width=160)}")
        head = "".join(f"<th>{e(title)}</th>" for _, title in counters)
        body = "".join(
            f'<tr><td>{e(_label(row))}</td><td class="n">{e(human_bytes(row.get("peak", 0)))}</td>'
            f'<td class="n">{e(human_bytes(row.get("held", 0)))}</td><td class="n">{e(human_bytes(row.get("earlier", 0)))}</td>'
            + "".join(f'<td class="n">{e(human_bytes(row[key])) if key in row else "-"}</td>' for key, _ in counters)
            + "</tr>"
            for row in rows
        )
        parts.append(f"<table><tr><th>after</th><th>peak saved</th><th>still held</th><th>from earlier iterations</th>{head}</tr>"
                     f"{body}</table>")
    modules = result.get("modules") or ()
    if modules:
        bars = [(m["module"] + (f' ({m["type"]})' if m.get("type") and m["type"] != m["module"] else ""),
                 [("saved", m["bytes"] / MIB)], human_bytes(m["bytes"])) for m in modules]
        parts.append(f"<h3>Per module: the most saved for backward in one forward pass</h3>{stacked_bars(bars, unit='MiB')}")
    lines = result.get("lines") or ()
    if lines:
        bars = [(f'{where(entry["path"], entry["line"], cwd)}  {entry.get("source") or ""}',
                 [("saved", entry["bytes"] / MIB)], human_bytes(entry["bytes"])) for entry in lines]
        parts.append(f"<h3>Per user line</h3>{stacked_bars(bars, unit='MiB')}")
    parts.append("</section>")
    return "".join(parts)
