"""Garbage collection between checks, not during them.

A check leaves most of what it built in reference cycles: a rule holds the file's context and
the context holds the rule's reports, an analysis and its context point at each other, a
recursive helper closes over itself. Only the cycle collector frees that, and left to
CPython's allocation thresholds it runs in the middle of a later check: on a 3,000-line file a
young-generation pass about every other check, and now and then a pass over an older
generation that costs more than the check it interrupts. So the language server runs the
collector itself, after a check's diagnostics are published, where nobody waits on it.
"""

from __future__ import annotations

import gc

#: Young-generation collections between two full ones. The young ones free what each check
#: leaves; a full one also walks everything the server keeps (parsed trees, remembered
#: results), so it runs only now and then, for cycles that outlived a young pass.
FULL_EVERY = 50


class BetweenChecks:
    def __init__(self) -> None:
        self._since_full = 0

    def after_check(self) -> None:
        self._since_full += 1
        if self._since_full >= FULL_EVERY:
            self._since_full = 0
            gc.collect()
        else:
            gc.collect(1)
