"""Byte counts as people read them (torch-free: used by the probe and by the report)."""

from __future__ import annotations


def human_bytes(count: float) -> str:
    """`512 B`, `1.5 KiB`, `3.0 MiB`, `2.00 GiB` (binary units, as torch's messages use)."""
    count = float(count)
    if abs(count) < 1024:
        return f"{int(count)} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        count /= 1024
        if abs(count) < 1024 or unit == "TiB":
            return f"{count:.2f} {unit}" if unit in ("GiB", "TiB") else f"{count:.1f} {unit}"
    return f"{count:.2f} TiB"
