"""Starting N ranks for `torchlint run --nproc-per-node N`; parent side, no torch import.

The ranks are started by torch's own launcher, ``torch.distributed.run`` (what ``torchrun``
runs), so that each rank gets the environment a real job gets (RANK, LOCAL_RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT) and the elastic agent's failure handling: when one rank dies the
agent stops the others. ``--standalone`` has it pick a free port on this machine. Each rank
runs the ordinary probed child (``runtime.child.main``); the supervisor stands above the launcher
as it stands above a single child, so a timeout or Ctrl-C kills every rank.

The ranks are the launcher's children, not ours: they cannot inherit the evidence pipe, and
write through the channel's socket instead (``runtime.channel``), one connection per rank.
"""

from __future__ import annotations

import os

#: The agent's grace between SIGTERM and SIGKILL when it stops the other ranks (30 s by
#: default): a rank blocked in a collective ignores SIGTERM until the collective returns.
SHUTDOWN_TIMEOUT_S = 2
#: How often the agent looks at its ranks (torch's default since 2.2; it was 5 s before).
MONITOR_INTERVAL_S = 0.1


def rank_command(launcher: list[str], nproc: int, child: list[str]) -> list[str]:
    """The command that starts ``nproc`` ranks, each running ``child`` (python and its
    arguments). ``launcher`` runs torch's launcher (``runtime.distributed.agent``)."""
    return [*launcher, "--standalone", f"--nproc-per-node={nproc}", "--max-restarts=0",
            f"--monitor-interval={MONITOR_INTERVAL_S}", "--no-python", *child]


def rank_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Variables for the launcher. OMP_NUM_THREADS=1 is what the launcher would set itself
    (printing a banner about it into the program's output); a value the user set stays."""
    environ = os.environ if environ is None else environ
    extra = {"TORCH_ELASTIC_SHUTDOWN_TIMEOUT": str(SHUTDOWN_TIMEOUT_S)}
    if "OMP_NUM_THREADS" not in environ:
        extra["OMP_NUM_THREADS"] = "1"
    return extra
