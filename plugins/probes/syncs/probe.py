"""Syncs probe: host-device synchronisations repeated within each training step.

* TL734 a user line that synchronises the host with the GPU more than once per optimizer
  step: `.item()`, `.cpu()`, `.tolist()`, `bool(t)`, `print(t)` inside a per-sample loop or
  a metric computed element by element. Each sync waits until every queued GPU kernel has
  run, so the GPU idles while Python catches up. One `loss.item()` per step, for logging,
  is the norm and is not reported.

Counted under `--device fake-cuda`, where every sync the program would make on a GPU is
recorded (with the op) as it happens; the probe asks for the user's line at each one.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from torch.optim import optimizer as optimizer_hooks

from torchlint.runtime.probing import Probe

#: Syncs per step at one line above which it is reported (one per step is logging).
PER_STEP = 1


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
        self.windows = 0
        self.log = None  # the device mode's sync log exists once the program runs: see _stepped
        self.handle = optimizer_hooks.register_optimizer_step_post_hook(self._stepped)

    def uninstall(self) -> None:
        self.handle.remove()
        if self.log is not None and self._synced in self.log.listeners:
            self.log.listeners.remove(self._synced)
        self._judge()

    def _stepped(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.log is None:
            # Listening starts at the first step: set-up before training (loading, a first
            # print) is not per step.
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

    def _synced(self, op: str) -> None:
        site = self.ctx.site()
        if site is None:
            return
        key = (site.path, site.line)
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
            self.ctx.evidence(
                self,
                code=None,
                at=self.sites[key],
                message=(
                    f"this line synchronises the host with the GPU at least {fewest} times in every optimizer step "
                    f"({self.total[key]} in all: {ops}); each sync waits for all queued GPU work: keep the values "
                    "on the device and read them once per step"
                ),
                data={"fewest_per_step": fewest, "syncs": self.total[key], "steps": self.windows, "ops": dict(self.ops[key])},
            )


PROBE = SyncsProbe
