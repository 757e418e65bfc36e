"""The short name of a torch operation, as messages show it: shared by the probes and the
device modes (``devices.meta`` names the operation a simulation cannot run)."""

from __future__ import annotations

from typing import Any


def op_name(func: Any) -> str:
    """`add` for Tensor.__add__, `cross_entropy` for F.cross_entropy."""
    name = getattr(func, "__name__", None) or repr(func)
    return name.strip("_") or name
