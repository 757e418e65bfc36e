"""Building blocks for HTML report sections: escaping and inline-SVG bar charts.

The page around them is `torchlint.runtime.report.html_page`'s; probes' plugins build their
sections (``torchlint_run_section``) from these, so every section looks alike and nothing is
fetched when the report is opened.
"""

from __future__ import annotations

import html
from typing import Any, Iterable

COLORS = {"forward": "#4f7cff", "backward": "#f08c3a", "optimizer": "#2fb67c", "other": "#b9c0cc",
          "eager": "#8a94a6", "compiled": "#4f7cff", "flops": "#8e6cf0"}


def e(text: Any) -> str:
    """``text`` escaped for HTML text and attribute values."""
    return html.escape(str(text), quote=True)


def stacked_bars(rows: list[tuple[str, list[tuple[str, float]], str]], *, width: int = 1080, label_width: int = 360,
                 unit: str = "ms", bar: int = 18, gap: int = 8) -> str:
    """Horizontal stacked bars: rows of (label, [(series, value)], right-hand note)."""
    if not rows:
        return '<p class="muted">nothing to show</p>'
    top = max(sum(v for _, v in parts) for _, parts, _ in rows) or 1.0
    plot = width - label_width - 110
    height = len(rows) * (bar + gap) + gap
    out = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">']
    for index, (label, parts, note) in enumerate(rows):
        y = gap + index * (bar + gap)
        out.append(f'<text x="{label_width - 8}" y="{y + bar - 5}" text-anchor="end" font-size="12" fill="#2c3447">{e(clip(label, 58))}</text>')
        x = float(label_width)
        out.append(f'<rect x="{label_width}" y="{y}" width="{plot}" height="{bar}" fill="#f1f3f8" rx="3"/>')
        for series, value in parts:
            w = plot * value / top
            if w <= 0:
                continue
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{max(w, 1):.1f}" height="{bar}" fill="{COLORS.get(series, "#4f7cff")}" rx="2">'
                       f'<title>{e(series)}: {value:.3f} {e(unit)}</title></rect>')
            x += w
        out.append(f'<text x="{x + 6:.1f}" y="{y + bar - 5}" font-size="11.5" fill="#4a5368">{e(note)}</text>')
    out.append("</svg>")
    return "".join(out)


def paired_bars(rows: list[tuple[str, float, float, str]], *, series: tuple[str, str] = ("eager", "compiled"),
                width: int = 1080, label_width: int = 360, unit: str = "ms", bar: int = 9, gap: int = 10) -> str:
    """Two thin bars per row, one per series, on one scale: rows of (label, first, second, note)."""
    if not rows:
        return '<p class="muted">nothing to show</p>'
    top = max(max(a, b) for _, a, b, _ in rows) or 1.0
    plot = width - label_width - 110
    height = len(rows) * (2 * bar + gap) + gap
    out = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">']
    for index, (label, first, second, note) in enumerate(rows):
        y = gap + index * (2 * bar + gap)
        out.append(f'<text x="{label_width - 8}" y="{y + 2 * bar - 4}" text-anchor="end" font-size="12" fill="#2c3447">{e(clip(label, 58))}</text>')
        for offset, name, value in ((0, series[0], first), (bar, series[1], second)):
            w = plot * value / top
            out.append(f'<rect x="{label_width}" y="{y + offset}" width="{max(w, 1):.1f}" height="{bar - 1}" '
                       f'fill="{COLORS.get(name, "#4f7cff")}" rx="2"><title>{e(name)}: {value:.3f} {e(unit)}</title></rect>')
        end = label_width + plot * max(first, second) / top
        out.append(f'<text x="{end + 6:.1f}" y="{y + 2 * bar - 4}" font-size="11.5" fill="#4a5368">{e(note)}</text>')
    out.append("</svg>")
    return "".join(out)


def split_bar(split: dict[str, float], *, width: int = 1080) -> str:
    total = sum(split.values()) or 1.0
    out = [f'<svg width="{width}" height="34" viewBox="0 0 {width} 34" role="img">']
    x = 0.0
    for series in ("forward", "backward", "optimizer", "other"):
        value = split.get(series, 0.0)
        w = width * value / total
        if w <= 0:
            continue
        out.append(f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="34" fill="{COLORS[series]}"><title>{series}: {value:.3f} ms</title></rect>')
        if w > 70:
            out.append(f'<text x="{x + 8:.1f}" y="22" font-size="12.5" fill="#fff" font-weight="600">{series} {value / total:.0%}</text>')
        x += w
    out.append("</svg>")
    return "".join(out)


def legend(series: Iterable[str]) -> str:
    return '<div class="legend">' + "".join(f'<span><i style="background:{COLORS[s]}"></i>{e(s)}</span>' for s in series) + "</div>"


def clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
