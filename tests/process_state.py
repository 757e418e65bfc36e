"""Whether a process is still running, for tests that check a run left nothing behind."""

from __future__ import annotations


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (a zombie has ended; only its exit status waits)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # the name in parentheses may hold spaces
    except OSError:
        return False
