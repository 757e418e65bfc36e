"""One rank of `torchlint run --nproc-per-node N`; child process only.

torch's launcher (``torch.distributed.run``) starts every rank with RANK, LOCAL_RANK,
WORLD_SIZE, MASTER_ADDR and MASTER_PORT in its environment, and each rank is the ordinary
probed child. This module is what differs in a rank:

- every event it sends carries its ``rank`` (and the ``t`` it was sent, on the monotonic
  clock all processes share), so the parent can merge the ranks' evidence into one report
  and tell which rank was where first;
- ``init_process_group`` is bounded by the run's deadline: a collective that one rank never
  joins makes the others wait for the backend's timeout (30 minutes for gloo), which must
  end before ``--timeout`` does; and without a GPU (``--device cpu`` or ``fake-cuda``) an
  ``nccl`` backend is run as ``gloo``, the only backend there is, and the run says so.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import os
import time
from typing import Any, Iterator

#: How long before the run's deadline the backend's own timeout must fire, so that the rank
#: still reports the error (and the others their state) before the watchdog ends it.
BACKEND_TIMEOUT_MARGIN_S = 5.0
MIN_BACKEND_TIMEOUT_S = 2.0


def rank_of_environment() -> tuple[int, int, int] | None:
    """(rank, local rank, world size) when torch's launcher started this process as a rank
    (one of one included: `--nproc-per-node 1`); None otherwise."""
    try:
        world = int(os.environ["WORLD_SIZE"])
        rank = int(os.environ["RANK"])
        local = int(os.environ.get("LOCAL_RANK", rank))
    except (KeyError, ValueError):
        return None
    return (rank, local, world) if world >= 1 else None


class RankedEvents:
    """An event writer whose every event names the rank that sent it."""

    def __init__(self, writer: Any, rank: int) -> None:
        self._writer = writer
        self.rank = rank

    def emit(self, event: str, **fields: Any) -> None:
        fields.setdefault("rank", self.rank)
        fields.setdefault("t", round(time.monotonic(), 3))
        self._writer.emit(event, **fields)

    def close(self) -> None:
        self._writer.close()


def ranked(writer: Any, options: dict) -> Any:
    """``writer`` tagging its events with this process's rank in a distributed run."""
    found = rank_of_environment()
    if found is None or not options.get("distributed"):
        return writer
    return RankedEvents(writer, found[0])


def backend_timeout(deadline: float, now: float | None = None) -> datetime.timedelta:
    """The process group's timeout: what is left of the run, less a margin."""
    left = deadline - (time.monotonic() if now is None else now) - BACKEND_TIMEOUT_MARGIN_S
    return datetime.timedelta(seconds=max(MIN_BACKEND_TIMEOUT_S, left))


def substitute_backend(backend: Any, has_gpu: bool) -> tuple[Any, str | None]:
    """The backend to use and a note when it is not the one asked for: NCCL needs a GPU."""
    if has_gpu or backend is None or not isinstance(backend, str) or "nccl" not in backend.lower():
        return backend, None
    if ":" in backend:  # "cpu:gloo,cuda:nccl": every device on gloo
        return "gloo", f"backend {backend!r} run as 'gloo' (no GPU)"
    return "gloo", "backend 'nccl' run as 'gloo' (no GPU)"


@contextlib.contextmanager
def rank_setup(options: dict, device: str, deadline: float, events: Any) -> Iterator[None]:
    """While the target runs: ``init_process_group`` with a bounded timeout and, without a
    real GPU, gloo for nccl."""
    if rank_of_environment() is None or not options.get("distributed"):
        yield
        return
    import torch.distributed as dist
    from torch.distributed import distributed_c10d

    original = distributed_c10d.init_process_group
    has_gpu = device == "cuda"

    @functools.wraps(original)
    def init_process_group(backend: Any = None, *args: Any, **kwargs: Any) -> Any:
        if "backend" in kwargs:
            backend = kwargs.pop("backend")
        if backend is None and not has_gpu:
            backend = "gloo"  # torch would pick nccl as well for a simulated CUDA device
        backend, note = substitute_backend(backend, has_gpu)
        if note:
            events.emit("distributed-note", message=note)
        asked = kwargs.get("timeout")
        bound = backend_timeout(deadline)
        kwargs["timeout"] = min(asked, bound) if isinstance(asked, datetime.timedelta) else bound
        return original(backend, *args, **kwargs)

    # Both names: scripts call dist.init_process_group, torch's own helpers the module's.
    replaced = [(dist, "init_process_group", dist.init_process_group), (distributed_c10d, "init_process_group", original)]
    for owner, name, _ in replaced:
        setattr(owner, name, init_process_group)
    try:
        yield
    finally:
        for owner, name, value in replaced:
            setattr(owner, name, value)
