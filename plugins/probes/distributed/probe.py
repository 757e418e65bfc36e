"""Distributed probe: what each rank of `torchlint run --nproc-per-node N` does that the
other ranks must agree with. Installed only in a run with several ranks.

Each rank sends, out of band (the evidence channel, never the process group):

- every collective it calls (``runtime.distributed.collectives``), which the parent compares across
  ranks while they run: TL719 (divergence) and TL720 (shape mismatch);
- after its optimizer steps 1, 2, 4, 8, ... (a doubling cadence: ranks that drift apart
  later in the run are seen, at a cost that grows with the log of the run), a digest of every
  parameter and buffer of the model (sum and position-weighted sum, in float64): TL721 when
  they differ across ranks. Parameters sharded on purpose (a DTensor with a ``Shard``
  placement) are left out, and so are buffers DDP re-broadcasts (``broadcast_buffers``);
- the first indices each ``DistributedSampler`` gives it: TL722 when every rank got the
  same ones;
- for a ``DistributedDataParallel(find_unused_parameters=True)``, whether every parameter got
  a gradient in each of the first optimizer steps: evidence for TL807 (the static rule) and
  TL723 when it did, i.e. the flag only costs time.

The comparisons happen in the parent (``runtime.distributed.report``): a rank sees only itself.
"""

from __future__ import annotations

import functools
import sys
import weakref
from typing import Any

import torch
from torch.nn.modules import module as module_hooks
from torch.optim import optimizer as optimizer_hooks

from torchlint.probe import CollectiveRecorder, Probe

#: Optimizer steps over which `find_unused_parameters=True` is measured.
UNUSED_CHECK_STEPS = 3
#: Indices of each sampler sent to the parent (enough to tell the ranks' shares apart).
SAMPLER_INDICES_SENT = 64


class DistributedProbe(Probe):
    name = "distributed"
    order = 95
    #: TL803 (a collective under a rank condition) is confirmed in the parent, where the ranks'
    #: collectives are compared (``runtime.distributed.report``); here each collective line is noted.
    confirms = ("TL803", "TL807")
    runtime_code = "TL723"
    summary = "collectives, parameters, samplers and DDP flags compared across ranks"

    @classmethod
    def wanted(cls, options: dict) -> bool:
        return bool(options.get("distributed"))

    def install(self) -> None:
        ctx = self.ctx
        self.recorder = CollectiveRecorder(ctx.events.emit, self._collective_site, ctx.source)
        self.recorder.install()
        self._modules: weakref.WeakSet = weakref.WeakSet()
        self._digested = False
        self._model: Any = None  # weakref to the trained model, once found at the first step
        self._steps = 0
        self._ddps: list[_UnusedParameterWatch] = []
        self._handles = [
            optimizer_hooks.register_optimizer_step_post_hook(self.guarded(self._after_step)),
            module_hooks.register_module_forward_pre_hook(self.guarded(self._note_module)),
        ]
        self._restores = [_patch_sampler(self), _patch_ddp(self)]

    def uninstall(self) -> None:
        self.recorder.uninstall()
        for handle in self._handles:
            handle.remove()
        for restore in self._restores:
            restore()
        for watch in self._ddps:
            watch.report(final=True)

    def _collective_site(self, _: Any) -> Any:
        site = self.ctx.frames.user_site(sys._getframe(1))
        self.ctx.observed(self, "TL803", site, "the ranks' collectives did not diverge here")
        return site

    # -- the model, and its digest at the first step -----------------------------------------
    def _note_module(self, module: Any, args: Any) -> None:
        if not self._digested:
            self._modules.add(module)

    def _after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        for watch in self._ddps:
            watch.step_done()
        self._steps += 1
        if not self._digested:
            self._digested = True
            self._handles[1].remove()
            model = _the_model(list(self._modules))
            self._modules = weakref.WeakSet()
            self._model = weakref.ref(model) if model is not None else None
        if self._model is None or not _is_digest_step(self._steps):
            return
        wrapper = self._model()
        if wrapper is None:
            return
        model = _unwrapped(wrapper)
        site = self.ctx.frames.user_site(sys._getframe(1))
        self.ctx.events.emit("param-digest", model=type(model).__name__, at=[site.path, site.line] if site else None,
                             source=self.ctx.source(site), tensors=_digest(model), step=self._steps,
                             broadcast_buffers=getattr(wrapper, "broadcast_buffers", None))


def _is_digest_step(step: int) -> bool:
    """Steps 1, 2, 4, 8, ...: drift is seen within twice the step it starts at."""
    return step & (step - 1) == 0


def _the_model(modules: list) -> Any:
    """The model the program trains: the module with the most parameters that ran forward
    (the DDP wrapper when there is one: it says whether buffers are re-broadcast)."""
    from torch.nn.parallel import DistributedDataParallel

    if not modules:
        return None
    return max(modules, key=lambda m: (sum(1 for _ in m.parameters()), isinstance(m, DistributedDataParallel)))


def _unwrapped(model: Any) -> Any:
    from torch.nn.parallel import DistributedDataParallel

    return model.module if isinstance(model, DistributedDataParallel) else model


def _digest(model: Any) -> list[list]:
    """[name, "parameter"|"buffer", sum, weighted sum] of every tensor of the model."""
    rows = []
    with torch._C.DisableTorchFunction(), torch.no_grad():  # our own look: no probe or device mode sees it
        for kind, named in (("parameter", model.named_parameters()), ("buffer", model.named_buffers())):
            for name, tensor in named:
                if _sharded(tensor):
                    continue  # each rank holds its own shard: meant to differ
                flat = tensor.detach().reshape(-1).to(torch.float64)
                weights = torch.arange(1, flat.numel() + 1, dtype=torch.float64, device=flat.device)
                rows.append([name, kind, float(flat.sum()), float((flat * weights).sum())])
    return rows


def _sharded(tensor: Any) -> bool:
    placements = getattr(tensor, "placements", None)  # a DTensor's
    return bool(placements) and any(type(p).__name__ == "Shard" or getattr(p, "is_shard", lambda: False)() for p in placements)


def _patch_sampler(probe: DistributedProbe) -> Any:
    from torch.utils.data.distributed import DistributedSampler

    original_init, original_iter = DistributedSampler.__init__, DistributedSampler.__iter__

    @functools.wraps(original_init)
    def init(sampler: Any, *args: Any, **kwargs: Any) -> None:
        original_init(sampler, *args, **kwargs)
        site = probe.ctx.frames.user_site(sys._getframe(1))
        sampler.__torchlint_site__ = (site, probe.ctx.source(site))

    @functools.wraps(original_iter)
    def iterate(sampler: Any) -> Any:
        indices = list(original_iter(sampler))
        if not getattr(sampler, "__torchlint_sent__", False):
            sampler.__torchlint_sent__ = True
            site, source = getattr(sampler, "__torchlint_site__", (None, ""))
            probe.ctx.events.emit("sampler-indices", at=[site.path, site.line] if site else None, source=source,
                                  indices=[int(i) for i in indices[:SAMPLER_INDICES_SENT]], count=len(indices),
                                  num_replicas=getattr(sampler, "num_replicas", None), sampler_rank=getattr(sampler, "rank", None))
        return iter(indices)

    DistributedSampler.__init__, DistributedSampler.__iter__ = init, iterate

    def restore() -> None:
        DistributedSampler.__init__, DistributedSampler.__iter__ = original_init, original_iter

    return restore


def _patch_ddp(probe: DistributedProbe) -> Any:
    from torch.nn.parallel import DistributedDataParallel

    original = DistributedDataParallel.__init__

    @functools.wraps(original)
    def init(ddp: Any, *args: Any, **kwargs: Any) -> None:
        original(ddp, *args, **kwargs)
        if getattr(ddp, "find_unused_parameters", False):
            site = probe.ctx.frames.user_site(sys._getframe(1))
            probe._ddps.append(_UnusedParameterWatch(probe, ddp, site))

    DistributedDataParallel.__init__ = init

    def restore() -> None:
        DistributedDataParallel.__init__ = original

    return restore


class _UnusedParameterWatch:
    """Which parameters of one DDP model got a gradient in each optimizer step."""

    def __init__(self, probe: DistributedProbe, ddp: Any, site: Any) -> None:
        self.probe = probe
        self.site = site
        self.params = [p for p in ddp.module.parameters() if p.requires_grad]
        self.used: set[int] = set()
        self.steps = 0
        self.unused_seen = False
        self.reported = False
        self.handles = [p.register_post_accumulate_grad_hook(self._accumulated) for p in self.params]

    def _accumulated(self, param: Any) -> None:
        self.used.add(id(param))

    def step_done(self) -> None:
        if self.reported:
            return
        self.steps += 1
        if any(id(p) not in self.used for p in self.params):
            self.unused_seen = True
        self.used = set()
        if self.steps >= UNUSED_CHECK_STEPS:
            self.report(final=False)

    def report(self, final: bool) -> None:
        if self.reported:
            return
        self.reported = True
        for handle in self.handles:
            handle.remove()
        if self.unused_seen or self.steps == 0 or self.site is None:
            return
        steps = f"{self.steps} optimizer step{'s' * (self.steps != 1)}"
        message = (f"DistributedDataParallel(find_unused_parameters=True) here: all {len(self.params)} parameters got a "
                   f"gradient in each of the first {steps}; the flag only adds a graph traversal to every step")
        ctx = self.probe.ctx
        # For the static rule's finding on this line (TL807), and as TL723 where there is none;
        # the report keeps one of the two.
        ctx.evidence(self.probe, code="TL807", at=self.site, sites=[self.site], message=message, confirm_only=True,
                     data={"steps": self.steps, "parameters": len(self.params)})
        ctx.evidence(self.probe, code=None, at=self.site, message=message, runtime_code="TL723",
                     data={"steps": self.steps, "parameters": len(self.params)})


PROBE = DistributedProbe
