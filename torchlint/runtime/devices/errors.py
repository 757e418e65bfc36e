"""What a device mode raises: it cannot run here, or a simulation needs real values.

A module of their own so that ``modes`` (which starts the meta mode's machinery, ``meta``) and
``meta`` (which raises ``SimulationLimit``) need not import each other.
"""

from __future__ import annotations


class DeviceUnavailable(Exception):
    """The requested mode cannot run here; the message tells the user what to do instead."""


class SimulationLimit(BaseException):
    """A simulated mode reached an operation that needs real values (``.item()``, printing a
    number, a data-dependent shape). A BaseException so the target's ``except Exception``
    cannot swallow it; the run stops there and counts as success."""

    def __init__(self, message: str, op: str) -> None:
        super().__init__(message)
        self.op = op
