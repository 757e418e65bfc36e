"""The dataloader probe (imports torch): TL741, documented in the package.

Four class-level patches and one global hook, undone at uninstall:

* `DataLoader.__init__` notes the user line that created each loader and its settings;
* `DataLoader.__iter__` (starting an epoch: with workers, starting them) and
  `_BaseDataLoaderIter.__next__` (the next batch) are timed, in the thread that runs the
  program only: a loader drained by a prefetching thread keeps no step waiting;
  `_BaseDataLoaderIter.__init__` ties each iterator to its loader's line;
* the optimizer step post-hook marks step boundaries, the same optimizer steps the run
  counts (`runtime.child.steps`). Waits are added up per interval between two steps and kept only
  when the interval closes, so the share is of whole steps: set-up before the first step and
  an evaluation after the last one count for nothing. Without two optimizer steps, each
  loader's share is of the time from its first batch to its last.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Any

from torch.optim import optimizer as optimizer_hooks
from torch.utils.data import DataLoader
from torch.utils.data import dataloader as dataloader_module

from torchlint.probe import Probe, Site

from . import DEFAULT_THRESHOLD, PROBE_NAME

#: Whole step intervals (or batches, without steps) needed before a share is judged.
MIN_INTERVALS = 3
#: Waiting, in all, below which a share is not reported however large: a few milliseconds are
#: within a busy machine's scheduling noise (a worker process that did not get a core), and
#: cost the run nothing a change would win back. A fixed twin with two workers read 57% from
#: three 11 ms steps and 20 ms of waiting while other processes held both cores.
MIN_WAIT_S = 0.05


class LoaderLine:
    """What the DataLoaders created at one user line did."""

    def __init__(self, site: Site | None, settings: dict[str, Any]) -> None:
        self.site = site
        self.settings = settings
        self.batches = 0
        self.wait = 0.0  # seconds in __iter__/__next__, in the whole run
        self.open_wait = 0.0  # ... since the last optimizer step
        self.open_batches = 0
        self.step_wait = 0.0  # ... inside whole step intervals
        self.step_batches = 0
        self.first: float | None = None  # the first wait's start and the last wait's end
        self.last = 0.0


class DataLoaderProbe(Probe):
    name = PROBE_NAME
    runtime_code = "TL741"
    confirms = ("TL405",)
    summary = "the share of the step time spent waiting for a DataLoader's next batch"

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        if not getattr(ctx.device, "times_are_real", True):
            # Under fake-cuda or meta the step time is no GPU's: TL405 is not probed, rather
            # than "not reproduced" by a measurement that means nothing.
            self.confirms = ()

    def install(self) -> None:
        self.thread = threading.get_ident()
        self.lines: dict[tuple[str, int] | None, LoaderLine] = {}
        self.of_loader: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.of_iterator: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.last_step: float | None = None
        self.intervals = 0
        self.stepped = 0.0  # seconds in whole step intervals
        self.done = False
        probe = self
        # What the probe does inside the program's DataLoader calls must not raise there.
        self._created = self.guarded(self._created)
        self._waited = self.guarded(self._waited)
        iterator_class = dataloader_module._BaseDataLoaderIter
        self.originals = (DataLoader.__init__, DataLoader.__iter__, iterator_class.__init__, iterator_class.__next__)
        loader_init, loader_iter, iterator_init, iterator_next = self.originals

        def __init__(loader: Any, *args: Any, **kwargs: Any) -> None:
            loader_init(loader, *args, **kwargs)
            probe._created(loader)

        def __iter__(loader: Any) -> Any:
            line = probe.of_loader.get(loader)
            if line is None or threading.get_ident() != probe.thread:
                return loader_iter(loader)
            start = time.perf_counter()
            try:
                return loader_iter(loader)
            finally:
                probe._waited(line, start, batch=False)

        def iterator_init_noting_loader(iterator: Any, loader: Any, *args: Any, **kwargs: Any) -> None:
            # The iterator keeps no reference to its loader: note the line here, for every
            # iterator the loader makes (a subclass's own __iter__ included).
            iterator_init(iterator, loader, *args, **kwargs)
            line = probe.of_loader.get(loader)
            if line is not None:
                probe.of_iterator[iterator] = line

        def __next__(iterator: Any) -> Any:
            line = probe.of_iterator.get(iterator)
            if line is None or threading.get_ident() != probe.thread:
                return iterator_next(iterator)
            start = time.perf_counter()
            try:
                batch = iterator_next(iterator)
            except BaseException:
                probe._waited(line, start, batch=False)  # the end of an epoch: workers shut down
                raise
            probe._waited(line, start, batch=True)
            return batch

        DataLoader.__init__ = __init__  # type: ignore[method-assign]
        DataLoader.__iter__ = __iter__  # type: ignore[method-assign]
        iterator_class.__init__ = iterator_init_noting_loader  # type: ignore[method-assign]
        iterator_class.__next__ = __next__  # type: ignore[method-assign]
        self.handle = optimizer_hooks.register_optimizer_step_post_hook(self.guarded(self._stepped))

    def uninstall(self) -> None:
        iterator_class = dataloader_module._BaseDataLoaderIter
        (DataLoader.__init__, DataLoader.__iter__, iterator_class.__init__,  # type: ignore[method-assign]
         iterator_class.__next__) = self.originals
        self.handle.remove()
        self._judge()

    # -- measuring ----------------------------------------------------------------------------
    def _created(self, loader: Any) -> None:
        site = self.ctx.site()
        key = (site.path, site.line) if site else None
        line = self.lines.get(key)
        if line is None:
            line = self.lines[key] = LoaderLine(site, _settings(loader))
        self.of_loader[loader] = line

    def _waited(self, line: LoaderLine, start: float, *, batch: bool) -> None:
        end = time.perf_counter()
        if line.first is None:
            line.first = start
        line.last = end
        line.wait += end - start
        line.open_wait += end - start
        if batch:
            line.batches += 1
            line.open_batches += 1

    def _stepped(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if threading.get_ident() != self.thread:
            return
        now = time.perf_counter()
        if self.last_step is not None:  # an interval between two steps closes: its waits count
            self.intervals += 1
            self.stepped += now - self.last_step
            for line in self.lines.values():
                line.step_wait += line.open_wait
                line.step_batches += line.open_batches
        for line in self.lines.values():
            line.open_wait, line.open_batches = 0.0, 0
        self.last_step = now

    # -- judging ------------------------------------------------------------------------------
    def _judge(self) -> None:
        if self.done:
            return
        self.done = True
        threshold = float(self.ctx.options.get("dataloader_threshold", DEFAULT_THRESHOLD)) / 100
        real = getattr(self.ctx.device, "times_are_real", True)
        by_steps = self.intervals >= MIN_INTERVALS
        summaries = []
        for line in self.lines.values():
            if line.first is None:
                continue  # created, never iterated
            share, batches, wait = self._share(line, by_steps)
            summary = dict(line.settings, at=[line.site.path, line.site.line] if line.site else None,
                           batches=line.batches, mean_wait_ms=round(1000 * line.wait / line.batches, 3) if line.batches else None,
                           share=round(share, 4) if share is not None else None)
            summaries.append(summary)
            if line.site is None or share is None:
                continue
            if share > threshold and real and wait >= MIN_WAIT_S:
                self._report(line, share, threshold, wait / batches, by_steps)
            elif real and share > threshold:
                self.ctx.observed(self, "TL405", line.site, f"its batches took {100 * share:.0f}% of the step time but "
                                                            f"{1000 * wait:.0f} ms in all, too little to judge")
            elif real:
                self.ctx.observed(self, "TL405", line.site, f"its batches took {100 * share:.0f}% of the step time, "
                                                            f"below the {100 * threshold:.0f}% threshold")
        if not any(line.batches >= MIN_INTERVALS for line in self.lines.values()):
            return  # no loader gave enough batches to measure (none, or one batch and a crash): no section
        note = None
        if not real:
            note = (f"timed under --device {self.ctx.device.name}: the step time is that of the CPU standing in for a "
                    f"GPU, so these shares say little about a GPU run and TL741 is not reported")
        self.ctx.publish(self, {
            "device": self.ctx.device.name, "times_are_real": real, "threshold": threshold, "note": note,
            "steps": self.intervals if by_steps else 0,
            "step_ms": round(1000 * self.stepped / self.intervals, 3) if by_steps else None,
            "loaders": sorted(summaries, key=lambda s: -(s["share"] or 0)),
        })

    def _share(self, line: LoaderLine, by_steps: bool) -> tuple[float | None, int, float]:
        """The share of the time waited, the batches and the seconds it is computed from."""
        if by_steps:
            # A loader only iterated outside the steps (an evaluation after training) has no share.
            share = line.step_wait / self.stepped if self.stepped > 0 and line.step_batches >= MIN_INTERVALS else None
            return share, line.step_batches, line.step_wait
        span = line.last - line.first if line.first is not None else 0.0
        measured = span > 0 and line.batches >= MIN_INTERVALS  # one batch would always read 100%
        return (line.wait / span if measured else None), line.batches, line.wait

    def _report(self, line: LoaderLine, share: float, threshold: float, mean_wait: float, by_steps: bool) -> None:
        settings = line.settings
        basis = (f"{100 * share:.0f}% of the time between optimizer steps ({self.intervals} steps of "
                 f"{1000 * self.stepped / self.intervals:.1f} ms on average)" if by_steps else
                 f"{100 * share:.0f}% of the time from its first batch to its last (no optimizer steps)")
        advice = []
        if not settings["num_workers"]:
            advice.append("load batches in worker processes (`num_workers=4` or more), or make `__getitem__` cheaper "
                          "(decode once, cache)")
        else:
            advice.append("add workers, or make `__getitem__` and the collate function cheaper")
            if not settings["persistent_workers"]:
                advice.append("`persistent_workers=True` keeps the workers between epochs")
        if not settings["pin_memory"]:
            advice.append("`pin_memory=True` when the model is on a GPU")
        message = (
            f"the training loop waited for this DataLoader's next batch {basis}, {1000 * mean_wait:.1f} ms per batch, "
            f"above the {100 * threshold:.0f}% threshold; it has num_workers={settings['num_workers']}, "
            f"pin_memory={settings['pin_memory']}, batch_size={settings['batch_size']}: {'; '.join(advice)}"
        )
        data = {"share": round(share, 4), "mean_wait_ms": round(1000 * mean_wait, 3), **settings}
        self.ctx.evidence(self, code=None, at=line.site, message=message, data=data)
        if not settings["num_workers"]:
            # TL405 is off by default: the runtime finding above must not depend on it, and a
            # TL405 finding on this line, when selected, is confirmed by the same measurement.
            self.ctx.evidence(self, code="TL405", at=line.site, sites=[line.site], message=message, data=data,
                              confirm_only=True)


def _settings(loader: Any) -> dict[str, Any]:
    batch_size = getattr(loader, "batch_size", None)
    if batch_size is None:
        batch_size = getattr(getattr(loader, "batch_sampler", None), "batch_size", None)
    return {
        "num_workers": int(getattr(loader, "num_workers", 0) or 0),
        "pin_memory": bool(getattr(loader, "pin_memory", False)),
        "persistent_workers": bool(getattr(loader, "persistent_workers", False)),
        "batch_size": batch_size if isinstance(batch_size, int) else None,
    }
