"""The memory probe (imports torch; see the package docstring for what it reports).

Iterations: an optimizer step ends one (once every optimizer that steps has: a GAN's two
steps are one iteration); where the program calls its model without stepping
or back-propagating in between (an evaluation loop), each call of the model ends one, and so
does each call after a backward pass in a program that makes no optimizer. The
first ``--memory-steps`` iterations of the training loop, and of the first loop that only
calls the model, are watched closely: bytes saved for backward by line and module
(``saved``), tensors that carry a graph into later iterations (``growth``). Outside them
the probe only counts steps and model calls, and passes saved tensors on.
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
import weakref
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules import module as module_hooks
from torch.optim import optimizer as optimizer_hooks

from torchlint.probe import USER, Probe, Site, on_optimizer_created

from . import DEFAULT_STEPS, NAME
from .containers import find_holders, find_name
from .explain import oom_message
from .growth import LOSS, OUTPUT, ROOT, Chain, GrowthWatch, Kept, reachable
from .oom import cuda_totals, failing_modules, out_of_memory, requested, state_bytes
from .saved import SavedAccounting
from .snapshot import summarize_snapshot
from .units import human_bytes

Tensor = torch.Tensor

#: Operations that can carry an accumulator from one iteration into the next.
ARITHMETIC = frozenset(
    f for f in (
        *(getattr(Tensor, name, None) for name in (
            "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "__add__", "__radd__", "__iadd__",
            "__sub__", "__rsub__", "__isub__", "__mul__", "__rmul__", "__imul__", "__truediv__", "__itruediv__")),
        torch.add, torch.sub, torch.mul, torch.div, torch.cat, torch.concat, torch.concatenate, torch.stack,
    ) if f is not None
)
IN_PLACE = frozenset(f for f in (getattr(Tensor, "add_", None), getattr(Tensor, "__iadd__", None)) if f is not None)
LOSS_FUNCTIONS = frozenset(
    getattr(F, name) for name in dir(F)
    if (name.endswith("_loss") or name in ("cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div"))
    and callable(getattr(F, name))
)
BACKWARD = frozenset((Tensor.backward, torch.autograd.backward))
#: Rows of live memory kept for the report (watched iterations only).
ROWS = 24
#: Lines and modules in the report section.
TOP = 10


class MemoryProbe(Probe):
    name = NAME
    confirms = ("TL601",)
    runtime_code = "TL737"
    summary = "autograd graphs kept from step to step; what held the memory when it ran out; memory by module and line"
    #: After the autograd probe: its saved-tensor hooks sit below this probe's (see saved.py).
    order = 60

    # -- set-up -----------------------------------------------------------------------------
    def install(self) -> None:
        options = getattr(self.ctx, "options", None) or {}
        self.window = max(1, int(options.get("memory_steps") or DEFAULT_STEPS))
        self.device = getattr(self.ctx.device, "name", "cpu")
        self.thread = threading.get_ident()
        # The iteration clock.
        self.iteration = 0
        self.steps = 0
        self.forwards = 0
        self.backwards = 0
        self.last_kind = ""  # what ended the last iteration
        #: The iteration the last optimizer step began: the same model called again before the
        #: next step ends an iteration (an evaluation loop), but the step ends them all.
        self.step_start = 0
        #: Per model (top-level module with parameters): steps and backward passes at its last call.
        self.calls: dict[int, tuple[int, int]] = {}
        self.left = {"step": self.window, "forward": self.window}
        self.watching = True
        self.closed = False  # both windows used up: the module hooks are gone
        # Modules.
        self.depth = 0
        self.stack: list[str] = []
        self.names: dict[int, str] = {}
        self.types: dict[str, str] = {}
        self.roots: list[weakref.ref] = []
        self.parameterized: dict[int, bool] = {}  # top-level modules: whether they hold parameters
        self.optimizers: list[weakref.ref] = []
        # Accounting.
        self.saved = SavedAccounting(self._site, self._module, guard=self.guarded)
        self.saved.install()
        self.growth = GrowthWatch(self._site)
        self.rows: list[dict[str, Any]] = []
        self.reported: set[Any] = set()
        self.findings = 0  # evidence reported: the text report shows the section only then
        #: Piles of kept tensors seen between optimizer steps, waiting to be told apart from an
        #: accumulation for one backward pass (a policy gradient's episode): (key, evidence, tensors).
        self.pending: list[tuple[Any, dict[str, Any], list[weakref.ref]]] = []
        self.handles = [
            optimizer_hooks.register_optimizer_step_post_hook(self.guarded(self._after_step)),
            module_hooks.register_module_forward_pre_hook(self.guarded(self._enter)),
            module_hooks.register_module_forward_hook(self.guarded(self._leave), always_call=True),
        ]
        self.optimizer_made = False
        self.stepping: set[int] = set()  # optimizers that have stepped
        self.stepped_since: set[int] = set()  # ... since the last iteration ended
        self._restore_optimizer_init = on_optimizer_created(self.guarded(self._optimizer_made))
        self.history = False
        if options.get("memory_history") and self.device == "cuda" and torch.cuda.is_available():
            # Stacks of the live blocks only ("state"): no trace of every event to keep.
            torch.cuda.memory._record_memory_history(enabled="state", context="alloc", stacks="python")
            self.history = True

    def uninstall(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles = []
        self._restore_optimizer_init()
        self.saved.uninstall()
        if self.history:
            torch.cuda.memory._record_memory_history(enabled=None)
        self._judge_chains()

    def after_run(self) -> None:
        publish = getattr(self.ctx, "publish", None)
        if publish is not None:
            publish(self, self._summary())

    # -- the run's watch window ----------------------------------------------------------------
    def keeps_watching(self, steps: int) -> bool:
        # `--memory-steps` may ask for more steps than the run watches (never fewer: the
        # probe's own windows end it earlier); a probe whose windows are all used up is done.
        limit = self.ctx.watch_steps
        return not self.closed and (limit is None or steps < max(limit, self.window))

    def stop_watching(self) -> None:
        """No loop is watched from here on: no saved-tensor holders, no module hooks. What the
        watched iterations recorded still explains an out-of-memory error."""
        self.left = {loop: 0 for loop in self.left}
        self.watching = False
        self.saved.watch(False)
        self._close()

    # -- torch calls ------------------------------------------------------------------------
    def watches(self, func: Any) -> bool:
        return func in ARITHMETIC or func in LOSS_FUNCTIONS or func in BACKWARD

    def after(self, func: Any, args: tuple, kwargs: dict, result: Any) -> None:
        # No `before`: every watched call would pay for it, and backward's root is still
        # alive when it returns.
        if func in BACKWARD:
            self._backpropagated(args, kwargs)
            return
        if not self.watching or not isinstance(result, Tensor):
            return
        if func in LOSS_FUNCTIONS:
            self.growth.produced(result, LOSS, self._site())
        elif func in ARITHMETIC:
            if result.grad_fn is not None:  # not a parameter updated in place by the optimizer
                self.growth.combined(args, kwargs, result)
            elif func in IN_PLACE and torch.is_grad_enabled():
                self.ctx.observed(self, "TL601", self._site(), "the sum carried no autograd graph")

    def _backpropagated(self, args: tuple, kwargs: dict) -> None:
        self.backwards += 1
        root = args[0] if args else kwargs.get("tensors")
        if isinstance(root, (tuple, list)):
            root = root[0] if root else None
        if not isinstance(root, Tensor):
            return
        self.growth.backpropagated(root)
        if self.pending and root.grad_fn is not None:
            self._settle_pending(root)
        if self.watching:
            self.growth.produced(root, ROOT, self._site())

    def _settle_pending(self, root: Tensor) -> None:
        """A pile whose tensors this backward pass went through was kept for it, on purpose."""
        nodes, held = reachable([root.grad_fn])
        still = []
        for key, evidence, refs in self.pending:
            tensors = [t for t in (ref() for ref in refs) if t is not None]
            if any(t.grad_fn is not None and id(t.grad_fn) in nodes for t in tensors):
                self.growth.forget(tensors)
                self.reported.discard(key)
            else:
                still.append((key, evidence, refs))
        self.pending = still
        del held

    # -- modules and steps ------------------------------------------------------------------
    def _enter(self, module: nn.Module, args: Any) -> None:
        if threading.get_ident() != self.thread:
            return
        if self.depth == 0:
            self._top_level(module)
        self.depth += 1
        self.stack.append(self.names.get(id(module)) or type(module).__name__)

    def _leave(self, module: nn.Module, args: Any, output: Any) -> None:
        if threading.get_ident() != self.thread:
            return
        self.depth = max(0, self.depth - 1)
        if self.stack:
            self.stack.pop()
        if self.depth == 0 and output is not None and self.watching:
            kind = OUTPUT if self._has_parameters(module) else LOSS
            self.growth.produced(output, kind, self._site())

    def _has_parameters(self, module: nn.Module) -> bool:
        known = self.parameterized.get(id(module))
        if known is None:
            known = self.parameterized[id(module)] = next(module.parameters(), None) is not None
        return known

    def _top_level(self, module: nn.Module) -> None:
        if id(module) not in self.names:
            self._name(module)
        if not self._has_parameters(module):
            return  # a loss module or a parameter-free function: not "the model"
        # The same model called again with no optimizer step in between: an evaluation loop
        # (nor a backward pass), or a training loop that updates without an optimizer. Another
        # model called in between (a GAN's generator and discriminator) ends nothing.
        last = self.calls.get(id(module))
        if last is not None and last[0] == self.steps:
            if last[1] == self.backwards:
                self._boundary("forward")
            elif not self.optimizer_made:
                self._boundary("backward")
        self.calls[id(module)] = (self.steps, self.backwards)
        self.forwards += 1
        if self.watching:
            self.saved.forward_pass()

    def _name(self, root: nn.Module) -> None:
        top = type(root).__name__
        for name, module in root.named_modules():
            path = f"{top}.{name}" if name else top
            if id(module) not in self.names:
                self.names[id(module)] = path
                self.types[path] = type(module).__name__
        self.roots.append(weakref.ref(root))

    def _optimizer_made(self) -> None:
        self.optimizer_made = True

    def _after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if threading.get_ident() != self.thread:
            return
        self.steps += 1
        if len(self.optimizers) < 8 and all(ref() is not optimizer for ref in self.optimizers):
            self.optimizers.append(weakref.ref(optimizer))
        # A GAN steps two optimizers per iteration: the iteration ends once every optimizer
        # that steps has stepped again, or a generator's output would look kept across it.
        self.stepping.add(id(optimizer))
        self.stepped_since.add(id(optimizer))
        if self.stepped_since >= self.stepping:
            self.stepped_since = set()
            self.growth.steps += 1
            self._boundary("step")

    def _boundary(self, kind: str) -> None:
        """The end of an iteration (``kind``: what ended it: "step", "backward" or "forward")."""
        ending, following = self.iteration, self.iteration + 1
        loop = _loop(kind)
        self.last_kind = kind
        if self.watching:
            row = self.saved.close_iteration(following)
            kept = self.growth.close_iteration(
                following, self.step_start if kind == "step" else None, loop, between_steps=loop == "forward")
            # Whether an iteration is watched is decided when the one before it ends; one that
            # turns out to belong to a loop already watched counts for nothing.
            counts = self.left[loop] > 0
            # A loop under torch.no_grad() saves nothing: it neither shows nor uses up the
            # window (a later evaluation with grad on is watched).
            idle = kind == "forward" and not row["peak"] and not row["held"]
            if counts and not idle:
                row.update(iteration=ending, kind=kind, steps=self.steps, forwards=self.forwards)
                row.update(self._device_counters())
                if len(self.rows) < ROWS:
                    self.rows.append(row)
                self.left[loop] -= 1
                if self.left[loop] == 0:
                    self._judge_chains(kind)
            if kept is not None and counts:
                self._report_kept(kept, kind)
        else:
            self.saved.iteration = self.growth.iteration = following
        self.iteration = following
        if kind == "step":
            self.step_start = following
        # A model called twice in a training step ends an "evaluation" iteration; the step
        # that follows ends a training one, still watched while that window lasts.
        self.watching = self.left[loop] > 0 or (loop == "forward" and self.optimizer_made and self.left["step"] > 0)
        self.saved.watch(self.watching)
        if not self.watching and not any(self.left.values()):
            self._close()

    def _close(self) -> None:
        """Both loops watched: stop hooking modules (steps are still counted)."""
        if self.closed:
            return
        self.closed = True
        for handle in self.handles[1:]:
            handle.remove()
        del self.handles[1:]

    def _device_counters(self) -> dict[str, int]:
        if self.device == "cuda" and torch.cuda.is_available():
            return {"allocated": torch.cuda.memory_allocated(), "max_allocated": torch.cuda.max_memory_allocated()}
        # Under fake-cuda, torch.cuda.memory_allocated() counts the simulated tensors Python
        # still holds, not those only autograd's graphs hold: the saved-tensor accounting is
        # the measure there.
        return {}

    # -- TL737 ------------------------------------------------------------------------------
    def _report_kept(self, kept: Kept, kind: str) -> None:
        ids = {id(t) for t in kept.tensors}
        holders = find_holders(ids, sys._getframe(1), self.ctx.frames.verdict, os.path.abspath)
        holder = holders[0] if holders else None
        key = holder.expression if holder else tuple(kept.sites[:1])
        if key in self.reported:
            return
        self.reported.add(key)
        if holder is not None and holder.adds:
            at, sites = holder.adds[0], holder.adds
        else:
            at = kept.sites[0] if kept.sites else self._site()
            sites = [at]
        unit = _unit(kind)
        what = " and ".join(_plural(name) for name in sorted(kept.kinds))
        counts = kept.counts
        who = f"`{holder.expression}` keeps" if holder else "the program keeps"
        where = f" (added at {', '.join(s.short() for s in sites)})" if holder and holder.adds else ""
        made = [s.short() for s in kept.sites[:3] if s not in sites]
        nodes = kept.nodes
        message = (
            f"{who} {what} of earlier {unit}s with their autograd graphs{where}"
            + (f", made at {', '.join(made)}" if made else "")
            + f": it held {', '.join(map(str, counts))} of them after the last {len(counts)} {unit}s, a graph more each "
            f"{unit}; the graphs reach {_series(nodes)} autograd nodes{self._held(kind)}; keep `.item()` or `.detach()` "
            "of them" + (", and evaluate under `torch.no_grad()`" if OUTPUT in kept.kinds else "")
        )
        evidence = {"code": "TL601", "at": at, "sites": sites, "message": message, "data": {
            "kind": "kept", "holder": holder.expression if holder else None, "counts": counts, "nodes": nodes,
            "held_earlier": self._earlier(kind), "unit": unit, "tensors": kept.kinds,
        }}
        if kept.across_steps:
            self._report(**evidence)
        else:
            self.pending.append((key, evidence, [weakref.ref(t) for t in kept.tensors]))

    def _judge_chains(self, kind: str | None = None) -> None:
        """At the end of a watched loop, the sums carried across optimizer steps; at the end of
        the run (``kind`` None), every sum and pile still growing that no backward pass took."""
        for chain in self.growth.growing_chains(across_steps=kind is not None):
            chain.reported = True
            self._report_chain(chain, kind or (self.rows[-1]["kind"] if self.rows else "step"))
        if kind is None:
            for _, evidence, _ in self.pending:
                self._report(**evidence)
            self.pending = []

    def _report_chain(self, chain: Chain, kind: str) -> None:
        kind = "step" if chain.step_links else kind
        unit = _unit(kind)
        tensor = chain.ref() if chain.ref is not None else None
        name = find_name(tensor, sys._getframe(1), self.ctx.frames.verdict) if tensor is not None else None
        at = chain.sites[0]
        who = f"`{name}`" if name else f"the sum made at {at.short()}"
        nodes = [count for _, count in chain.nodes]
        message = (
            f"{who} carries an autograd graph from {unit} to {unit}: this line adds each {unit}'s tensor to it with its "
            f"graph, and it was carried into {chain.links} later {unit}s; its graph grew {_series(nodes)} autograd nodes"
            f"{self._held(kind)}; add `.item()` (or `.detach()`) values instead"
        )
        self._report(code="TL601", at=at, sites=chain.sites, message=message, data={
            "kind": "accumulator", "name": name, "links": chain.links, "nodes": nodes, "held_earlier": self._earlier(kind), "unit": unit,
        })

    def _earlier(self, kind: str) -> list[int]:
        """Saved-for-backward bytes of earlier iterations still held, after the last watched
        iterations of this kind."""
        return [row.get("earlier", 0) for row in self.rows if row["kind"] == kind][-3:]

    def _held(self, kind: str) -> str:
        unit = _unit(kind)
        earlier = [n for n in self._earlier(kind) if n]
        if earlier:
            series = " -> ".join(human_bytes(n) for n in earlier)
            return f" and hold {series} that autograd saved for backward in earlier {unit}s"
        return " (backward freed their saved tensors: what grows is host memory for the graphs' nodes)"

    def _report(self, **evidence: Any) -> bool:
        new = self.ctx.evidence(self, **evidence)
        self.findings += new
        return new

    # -- TL738 ------------------------------------------------------------------------------
    def raised(self, exc: BaseException) -> None:
        self._judge_chains()
        kind = out_of_memory(exc)
        if kind is None:
            return
        site = self._failing_site(exc)
        modules = failing_modules(exc, self.names)
        live_lines, live_modules = self.saved.live_by()
        state = state_bytes(_alive(self.roots), _alive(self.optimizers))
        totals = cuda_totals() if kind == "cuda" and self.device == "cuda" and torch.cuda.is_available() else {}
        snapshot = None
        if self.history:
            snapshot = summarize_snapshot(torch.cuda.memory._snapshot(), lambda f: self.ctx.frames.verdict(f) == USER)
        live = bool(live_lines)
        by_line = live_lines if live else self.saved.peak_line
        by_module = live_modules if live else self.saved.peak_module
        unit = _unit(self.rows[-1]["kind"]) if self.rows else "step"
        facts = {
            "device": kind,
            "module": modules[-1][0] if modules else None,
            "module_type": modules[-1][1] if modules else None,
            "at": site.short() if site else None,
            "moment": self._moment(),
            "requested": requested(str(exc)),
            "steps": self.steps,
            "forward_calls": self.forwards,
            "totals": totals,
            "saved": {
                "live": live,
                "unit": unit,
                "total": sum(live_lines.values()) if live else self.saved.peak_total,
                "lines": [{"where": self.saved.sites[key].short(), "path": key[0], "line": key[1], "bytes": n}
                          for key, n in _top(by_line, TOP) if key in self.saved.sites],
                "modules": [{"module": m, "bytes": n} for m, n in _top(by_module, TOP)],
            },
            "snapshot": snapshot,
            "state": state,
        }
        if self._report(code=None, runtime_code="TL738", at=site, message=oom_message(facts), data=facts):
            self.ctx.explain(exc, "TL738")

    def _failing_site(self, exc: BaseException) -> Site | None:
        found = None
        for frame, _ in traceback.walk_tb(exc.__traceback__):
            if self.ctx.frames.verdict(frame.f_code.co_filename) == USER:
                found = frame
        return self.ctx.frames.user_site(found) if found is not None else None

    def _moment(self) -> str:
        calls = f"{self.forwards} model call{'s' * (self.forwards != 1)}"
        steps = f"{self.steps} optimizer step{'s' * (self.steps != 1)}"
        if self.steps == 0 and self.forwards <= 1:
            return "in the first call of the model" if self.forwards else "before the model ran"
        if self.steps == 0:
            return f"after {calls}, before any optimizer step"
        if self.last_kind == "forward":
            return f"in a loop that only calls the model, after {steps} and {calls}"
        return f"in step {self.steps + 1} (after {steps}, {calls})"

    # -- the report -------------------------------------------------------------------------
    def _summary(self) -> dict[str, Any]:
        device = {"fake-cuda": "cuda (simulated)"}.get(self.device, self.device)
        lines = []
        for (path, line), nbytes in _top(self.saved.peak_line, TOP):
            site = self.saved.sites.get((path, line))
            lines.append({"path": path, "line": line, "bytes": nbytes, "source": self.ctx.source(site)[:120] if site else ""})
        modules = [{"module": m, "type": self.types.get(m, ""), "bytes": n} for m, n in _top(self.saved.peak_module, TOP)]
        return {
            "device": device,
            "watched": self.window,
            "peak_saved": self.saved.peak_total,
            "iterations": self.rows,
            "modules": modules,
            "lines": lines,
            "steps": self.steps,
            "forward_calls": self.forwards,
            "findings": self.findings,
        }

    # -- helpers ----------------------------------------------------------------------------
    def _site(self) -> Site | None:
        return self.ctx.site()

    def _module(self) -> str | None:
        return self.stack[-1] if self.stack else None


def _plural(kind: str) -> str:
    """`losses`, `model outputs`, `backward roots`."""
    return kind + ("es" if kind.endswith("s") else "s")


def _unit(kind: str) -> str:
    return {"step": "step", "forward": "model call"}.get(kind, "iteration")


def _loop(kind: str) -> str:
    """The window an iteration counts in: training (ended by a step or a backward pass) or
    evaluation (ended by the next call of the model)."""
    return "forward" if kind == "forward" else "step"


def _series(counts: list[int]) -> str:
    return " -> ".join(str(c) for c in counts) if counts else "an unknown number of"


def _top(counter: Any, count: int) -> list[tuple[Any, int]]:
    return sorted(((k, v) for k, v in counter.items() if v), key=lambda item: -item[1])[:count]


def _alive(refs: list[weakref.ref]) -> list[Any]:
    return [obj for obj in (ref() for ref in refs) if obj is not None]


PROBE = MemoryProbe
