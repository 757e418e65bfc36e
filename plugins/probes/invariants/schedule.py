"""Which optimizer steps the invariants probe reads.

Every step at first, where most bugs show, then every ``EVERY``-th: a bug that starts later
(a learning rate dropped to 0 at step 4, ReLU units dying after a few updates) is still seen,
and a long run pays for an eighth of its steps' reads. A read costs a launch-bound tiny CNN's
step about a third of its time (the gradients' norms, a prefix of every parameter before and
after, a hook per parameter); every fourth step cost such a run 1.16x after the watch window.
"""

from __future__ import annotations

#: Steps read one after another from the start.
FIRST = 8
#: After them, one step in this many is read.
EVERY = 8


def is_read(step: int) -> bool:
    """Whether step number ``step`` (1 for the first) is read."""
    return step <= FIRST or step % EVERY == 0
