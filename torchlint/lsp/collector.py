"""Garbage collection between checks, not during them.

A check leaves most of what it built in reference cycles: a rule holds the file's context and
the context holds the rule's reports, an analysis and its context point at each other, a
recursive helper closes over itself. Only the cycle collector frees that, and left to
CPython's allocation thresholds it runs in the middle of a later check: on a 3,000-line file a
young-generation pass about every other check, and now and then a pass over an older
generation that costs more than the check it interrupts. So the language server runs the
collector itself, after a check's diagnostics are published, where nobody waits on it.

What survives that collection (the parsed trees and results the server keeps for the next
edit) is then frozen (`gc.freeze`): CPython's own collections during the next check still run,
and still free that check's cycles, but no longer walk everything the server keeps. Those
walks were the slow checks: on the 3,000-line editor benchmark file, in-process CPU time per
re-check, 90th percentile 315-360 ms with them and 230-265 ms without (medians 245-265 ms and
228-254 ms). The next `after_check` thaws it all first, so what has since become garbage is
collected as before: young objects every check, everything every `FULL_EVERY` checks.
"""

from __future__ import annotations

import gc

from torchlint.static.frozen_tree import freeze_for_the_process

#: Young-generation collections between two full ones. The young ones free what each check
#: leaves; a full one also walks everything the server keeps (parsed trees, remembered
#: results), so it runs only now and then, for cycles that outlived a young pass.
FULL_EVERY = 50


class BetweenChecks:
    def __init__(self) -> None:
        self._since_full = 0

    def after_check(self) -> None:
        gc.unfreeze()  # what the last call kept out of collections takes part again
        self._since_full += 1
        if self._since_full >= FULL_EVERY:
            self._since_full = 0
            gc.collect()
        else:
            gc.collect(1)
        freeze_for_the_process()
