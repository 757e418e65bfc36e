"""Syncs probe: host-device synchronisations repeated within each training step.

* TL734 a user line that synchronises the host with the GPU more than once per optimizer
  step: `.item()`, `.cpu()`, `.tolist()`, `bool(t)`, `print(t)` inside a per-sample loop or
  a metric computed element by element. Each sync waits until every queued GPU kernel has
  run, so the GPU idles while Python catches up. One `loss.item()` per step, for logging,
  is the norm and is not reported.

Counted under `--device fake-cuda`, where every sync the program would make on a GPU is
recorded (with the op) as it happens; the probe asks for the user's line at each one. On a
real GPU (`--device cuda`) the probe watches the same calls itself and times each one: the
time a sync takes is the time the host waited for the GPU's queue to drain, and the report
says how long each line waited per step.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import torch
from torch.optim import optimizer as optimizer_hooks

from torchlint.probe import Probe

#: Syncs per step at one line above which it is reported (one per step is logging).
PER_STEP = 1

Tensor = torch.Tensor
#: On a GPU, the calls that wait for it when given a CUDA tensor: the ones fake-cuda counts.
SYNCING = {
    Tensor.item: "item", Tensor.tolist: "tolist", Tensor.__float__: "float", Tensor.__int__: "int",
    Tensor.__bool__: "bool", Tensor.__index__: "index", Tensor.__complex__: "complex", Tensor.__format__: "format",
    Tensor.__repr__: "repr", Tensor.cpu: "cpu", Tensor.numpy: "numpy", Tensor.to: "to",
}


class SyncsProbe(Probe):
    name = "syncs"
    order = 50
    runtime_code = "TL734"
    summary = "host-device syncs repeated within each optimizer step, by user line"

    def install(self) -> None:
        #: Syncs per line since the last step; closed into `fewest` at each step.
        self.window: Counter = Counter()
        #: Per line, the fewest syncs it made in any closed step (lines absent from a step drop out).
        self.fewest: dict[tuple[str, int], int] | None = None
        self.total: Counter = Counter()
        self.ops: dict[tuple[str, int], Counter] = {}
        self.sites: dict[tuple[str, int], Any] = {}
        #: Per line, seconds the host waited in its syncs (on a GPU only).
        self.waited: Counter = Counter()
        self.windows = 0
        self.log = None  # the device mode's sync log exists once the program runs: see _stepped
        #: On a real GPU the probe finds and times the syncs itself, from the first step on.
        self.timed = self.ctx.device.name == "cuda" and torch.cuda.is_available()
        self.listening = False
        self.started: list[float | None] = []
        self.handle = optimizer_hooks.register_optimizer_step_post_hook(self.guarded(self._stepped))

    def watches(self, func: Any) -> bool:
        return self.timed and func in SYNCING

    def before(self, func: Any, args: tuple, kwargs: dict) -> None:
        source = args[0] if args else None
        waits = (self.listening and isinstance(source, Tensor) and source.is_cuda
                 and (func is not Tensor.to or _to_host(args, kwargs)))
        self.started.append(time.perf_counter() if waits else None)

    def after(self, func: Any, args: tuple, kwargs: dict, result: Any) -> None:
        self._timed(func)

    def failed(self, func: Any, args: tuple, kwargs: dict, exc: BaseException) -> None:
        self._timed(func)

    def _timed(self, func: Any) -> None:
        started = self.started.pop() if self.started else None
        if started is not None:
            self._synced(SYNCING[func], time.perf_counter() - started)

    def stop_watching(self) -> None:
        # Per step means per watched step: the steps after the window would all look
        # sync-free (on a GPU the syncs are found through the calls no longer seen).
        self._stop_listening()

    def uninstall(self) -> None:
        self._stop_listening()
        self._judge()

    def _stop_listening(self) -> None:
        if self.handle is not None:
            self.handle.remove()
            self.handle = None
        if self.log is not None and self._synced in self.log.listeners:
            self.log.listeners.remove(self._synced)

    def _stepped(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if not self.listening:
            # Listening starts at the first step: set-up before training (loading, a first
            # print) is not per step.
            self.listening = True
            self.log = getattr(self.ctx.device, "syncs", None)
            if self.log is not None:
                self.log.listeners.append(self._synced)
            return
        window, self.window = self.window, Counter()
        self.windows += 1
        if self.fewest is None:
            self.fewest = dict(window)
        else:
            self.fewest = {key: min(count, window[key]) for key, count in self.fewest.items() if window[key]}

    def _synced(self, op: str, seconds: float = 0.0) -> None:
        site = self.ctx.site()
        if site is None:
            return
        key = (site.path, site.line)
        self.waited[key] += seconds
        self.window[key] += 1
        self.total[key] += 1
        self.ops.setdefault(key, Counter())[op] += 1
        self.sites.setdefault(key, site)

    def _judge(self) -> None:
        # A line counts when it synced more than PER_STEP times in every whole step seen.
        if self.windows < 2 or not self.fewest:
            return
        for key, fewest in sorted(self.fewest.items(), key=lambda item: -item[1]):
            if fewest <= PER_STEP:
                continue
            ops = ", ".join(f"`{op}` x{n}" for op, n in self.ops[key].most_common(3))
            waited = ""
            if self.timed:
                waited = f", waiting {1000 * self.waited[key] / max(self.windows, 1):.2f} ms per step for the GPU"
            self.ctx.evidence(
                self,
                code=None,
                at=self.sites[key],
                message=(
                    f"this line synchronises the host with the GPU at least {fewest} times in every optimizer step "
                    f"({self.total[key]} in all: {ops}{waited}); each sync waits for all queued GPU work: keep the values "
                    "on the device and read them once per step"
                ),
                data={"fewest_per_step": fewest, "syncs": self.total[key], "steps": self.windows, "ops": dict(self.ops[key]),
                      **({"waited_ms": round(1000 * self.waited[key], 3)} if self.timed else {})},
            )


def _to_host(args: tuple, kwargs: dict) -> bool:
    """`t.to("cpu")`, `t.to(torch.device("cpu"))` or `t.to(other_cpu_tensor)`, blocking."""
    if kwargs.get("non_blocking") or (len(args) > 2 and args[2] is True and isinstance(args[1], (str, torch.device))):
        return False
    target = kwargs.get("device", args[1] if len(args) > 1 else None)
    if isinstance(target, Tensor):
        target = target.device
    try:
        return target is not None and not isinstance(target, torch.dtype) and torch.device(target).type == "cpu"
    except (TypeError, RuntimeError):
        return False


PROBE = SyncsProbe
