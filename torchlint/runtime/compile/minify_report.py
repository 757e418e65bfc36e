"""How a `--minify` record reads: in the finding's message, the text report and the HTML.

Plain data (the record ``runtime.compile.minify`` builds), no torch: the parent renders it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from torchlint.runtime.report.html_kit import e
from torchlint.runtime.merge.matching import display_path

#: The debug dump's files worth a click, in the order a user opens them.
DEBUG_FILES = ("fx_graph_runnable.py", "output_code.py")


def _path(path: str, cwd: Path | None = None) -> str:
    return display_path(path, cwd or Path(os.getcwd()))


def ends_on(record: dict[str, Any], cwd: Path | None = None) -> str:
    """`aten.neg.default at train.py:12` for each op the minified graph kept."""
    ops = record.get("ops") or []
    return ", ".join(op["op"] + (f" at {_path(op['at'][0], cwd)}:{op['at'][1]}" if op.get("at") else "") for op in ops[:3]) + (
        f" and {len(ops) - 3} more" if len(ops) > 3 else "")


def verdict(record: dict[str, Any]) -> str:
    """Whether the minified script, run alone, failed as the program did."""
    checked = record.get("verified") or {}
    if checked.get("same"):
        return "reproduces the same failure when run alone"
    if checked.get("same") is None:
        return f"not run alone: {checked.get('detail', 'no time left')}"
    shown = {"ok": "runs without the failure", "accuracy": "shows an accuracy drift", "compile": "fails to compile"}.get(
        checked.get("kind"), f"fails otherwise ({checked.get('detail', '')})")
    return f"does NOT reproduce the same failure when run alone: it {shown}"


def minified_note(record: dict[str, Any] | None) -> str:
    """The finding message's tail: what the minifier made of it, in one clause."""
    if not record:
        return ""
    status = record.get("status")
    if status == "minified":
        return (f"; minified from {record.get('ops_before')} ops to {record.get('ops_after')} ({ends_on(record)}): "
                f"{_path(record['script'])} {verdict(record)}")
    if status in ("timed out", "failed", "not reproduced"):
        return f"; not minified: {record.get('reason', status)}"
    return ""


def failing_graph(record: dict[str, Any]) -> str | None:
    """The graph that failed (the worker names it), else the first one written for it."""
    return record.get("graph") or next(iter(record.get("graphs") or ()), None)


def minify_lines(record: dict[str, Any], cwd: Path) -> list[str]:
    status = record.get("status")
    if status == "not attempted":
        return [f"  minify: not attempted: {record.get('reason', '')}"]
    cut = " (cut by --timeout)" if record.get("budget_cut") else ""
    head = f"  minify ({record.get('kind')} failure, {record.get('stage')}; budget {record.get('timeout_s', 0):g} s{cut}): {status}"
    out = [head + (f" in {record['seconds']:g} s" if record.get("seconds") is not None else "")]
    if record.get("error_line"):
        out.append(f"    compiler: {record['error_line']}")
    if status == "minified":
        out.append(f"    {record.get('nodes_before')} -> {record.get('nodes_after')} FX nodes ({record.get('ops_before')} -> "
                   f"{record.get('ops_after')} ops, {record.get('queries')} tries); ends on {ends_on(record, cwd)}")
        for op in record.get("ops", [])[:3]:
            if op.get("code"):
                out.append(f"      {op['op']}  <- {op['code']}")
        out.append(f"    repro: {display_path(record['script'], cwd)} ({verdict(record)})")
    elif record.get("reason"):
        out.append(f"    {record['reason']}")
        if record.get("other_failures"):
            out.append(f"    instead: {record['other_failures'][0][:200]}")
    if status != "minified" and failing_graph(record):
        out.append(f"    failing graph (not minified, runs alone): {display_path(failing_graph(record), cwd)}")
    # Not reproduced: the dump is of a compile that did not fail, and says so.
    label = "debug dump (of the fresh process's compile, which did not fail)" if status == "not reproduced" else "debug dump"
    for name in DEBUG_FILES:
        if name in (record.get("debug_files") or {}):
            out.append(f"    {label}: {display_path(record['debug_files'][name], cwd)}")
    return out


def minify_html(record: dict[str, Any], cwd: Path) -> str:
    """A paragraph with links, relative to the report folder the files were written into."""
    base = record.get("report_dir")

    def link(path: str) -> str:
        href = os.path.relpath(path, base) if base else Path(path).as_uri()
        return f'<a class="mono" href="{e(href)}">{e(display_path(path, cwd))}</a>'

    lines = [e(line.strip()) for line in minify_lines(record, cwd)[:1]]
    if record.get("status") == "minified":
        lines.append(f'{record.get("ops_before")} → {record.get("ops_after")} ops; ends on {e(ends_on(record, cwd))}; '
                     f'{link(record["script"])}: {e(verdict(record))}')
    elif record.get("reason"):
        lines.append(e(record["reason"]))
    if record.get("status") != "minified" and failing_graph(record):
        lines.append(f'failing graph: {link(failing_graph(record))}')
    debug = record.get("debug_files") or {}
    if debug:
        fresh = " of the fresh process's compile, which did not fail" if record.get("status") == "not reproduced" else ""
        lines.append(f"debug dump (TORCH_COMPILE_DEBUG){fresh}: " + ", ".join(link(debug[n]) for n in DEBUG_FILES if n in debug))
    return '<h3>Minified repro</h3><p>' + "<br>".join(lines) + "</p>"
