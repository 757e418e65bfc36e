"""The probe API and the one TorchFunctionMode that feeds every probe; child process only.

A probe is a class with metadata (``name``, the static ``confirms`` codes, the TL7xx
``runtime_code`` for evidence no static finding explains) and lifecycle methods. Probes that
watch torch calls say which functions they want (``watches``); the dispatcher caches that
answer per function, so an operation no probe wants costs one dict lookup. A probe that
raises is switched off and reported (TL707); the target never sees the probe's error.

Third-party probes subclass ``Probe`` and return their classes from a ``torchlint_probes``
hook implementation, exactly like the built-in ones in ``torchlint.plugins.probes``.
"""

from __future__ import annotations

import linecache
import os
import sys
import threading
import traceback
from typing import TYPE_CHECKING, Any, ClassVar, Iterable

import torch
from torch.nn.modules import module as module_hooks
from torch.optim import optimizer as optimizer_hooks
from torch.overrides import TorchFunctionMode

from torchlint.runtime.events import EventWriter
from torchlint.runtime.frames import FrameClassifier, Site
from torchlint.runtime.child.steps import step_closure
from torchlint.runtime.child.user_warnings import TargetWarning

if TYPE_CHECKING:  # an annotation only: the device modes import this module
    from torchlint.runtime.devices.modes import DeviceMode

_is_compiling = torch.compiler.is_compiling


class Probe:
    """Base class of runtime probes. Override what you need; every method is optional."""

    #: Short name shown in progress lines and reports.
    name: ClassVar[str] = ""
    #: Static rule codes this probe can confirm (or find not reproduced).
    confirms: ClassVar[tuple[str, ...]] = ()
    #: Code for evidence that matches no static finding (a TL7xx runtime-only finding).
    runtime_code: ClassVar[str | None] = None
    summary: ClassVar[str] = ""
    #: Probes are installed, and see each call, in (order, name) order: a probe that must look
    #: first (the device probe) has a small number, one that works after the run a large one.
    order: ClassVar[int] = 50

    def __init__(self, ctx: ProbeContext) -> None:
        self.ctx = ctx

    def install(self) -> None:
        """Called before the target runs (patch functions, register hooks)."""

    def uninstall(self) -> None:
        """Called after the target has run, whatever happened; undo ``install``."""

    def after_run(self) -> None:
        """Called once the target has ended and every probe is uninstalled: work that must not
        slow the program down or be cut short by its end (the compile probe's backend ladder).
        A summary for the report is published here (``ctx.publish``)."""

    def watches(self, func: Any) -> bool:
        """Whether ``before``/``after``/``failed`` want calls of this torch function."""
        return False

    #: Whether ``before``/``after`` also want the torch calls an optimizer's ``step()`` makes
    #: (its update arithmetic, a few per parameter). Off, the dispatch steps off the mode stack
    #: for the length of ``step()``: on a small model those calls are most of a step's.
    inside_optimizer_step: ClassVar[bool] = False

    def keeps_watching(self, steps: int) -> bool:
        """Asked after each step (optimizer step, or forward call while there is no optimizer),
        ``steps`` being how many have ended: whether the probe still wants torch calls. The
        default watches the first ``--watch-steps`` steps (``ctx.watch_steps``; None: all).
        Once it answers False, ``stop_watching`` is called and the probe sees no more calls;
        once no probe watches, torch calls run with no Python in between."""
        limit = getattr(self.ctx, "watch_steps", None)
        return limit is None or steps < limit

    #: Set once the probe raised (TL707): its guarded hooks answer as if it were not there.
    switched_off: bool = False

    def guarded(self, hook: Any, fallback: Any = None) -> Any:
        """``hook`` as torch should call it: a module, optimizer or saved-tensor hook, or the
        callback of a function the probe patched. An exception from it must not become the
        program's: the probe is switched off and reported (TL707), as when ``before`` or
        ``after`` raise, and from then on ``fallback(*args)`` answers in its place (None, no
        change, when there is none; a pack hook's is ``passes_tensor``)."""
        probe, ctx = self, self.ctx
        where = getattr(hook, "__name__", None) or repr(hook)

        def call(*args: Any, **kwargs: Any) -> Any:
            if _is_compiling():  # Dynamo traces saved-tensor hooks: no try block, no guard on our state
                return hook(*args, **kwargs)
            if not probe.switched_off:
                try:
                    return hook(*args, **kwargs)
                except Exception as exc:
                    ctx.switch_off(probe, where, exc)
            return fallback(*args, **kwargs) if fallback is not None else None

        call.__name__ = where
        call.__wrapped__ = hook  # type: ignore[attr-defined]
        return call

    def stop_watching(self) -> None:
        """The probe's watch is over (see ``keeps_watching``): remove what costs the program time
        per operation or per tensor (saved-tensor hooks, module hooks). What catches rare
        events cheaply (``raised``, a patched ``torch.load``) may stay until ``uninstall``."""

    def before(self, func: Any, args: tuple, kwargs: dict) -> None:
        """Before a watched call runs."""

    def after(self, func: Any, args: tuple, kwargs: dict, result: Any) -> None:
        """After a watched call returned ``result``."""

    def failed(self, func: Any, args: tuple, kwargs: dict, exc: BaseException) -> None:
        """A watched call raised ``exc`` (it is re-raised afterwards)."""

    def raised(self, exc: BaseException) -> None:
        """The program is ending with ``exc``, uncaught. A probe that explains it reports
        evidence and calls ``ctx.explain(exc, code)``: then it needs no TL702 of its own."""

    def warned(self, warning: TargetWarning) -> None:
        """The target triggered a warning (``warning.site``: the user line that caused it). Called
        for every warning shown, and for those the program's own filters ignore but that torch
        raised inside an operation (see ``runtime.child.user_warnings``)."""


class ProbeContext:
    """What probes share: the event channel, user-frame lookup and the device mode."""

    def __init__(self, events: EventWriter, frames: FrameClassifier, device: DeviceMode, progress: Any) -> None:
        self.events = events
        self.frames = frames
        self.device = device
        self.progress = progress
        #: Steps the probes watch every torch call for (`--watch-steps`); None: all of them.
        self.watch_steps: int | None = None
        self._observed: set[tuple] = set()
        self._reported: set[tuple] = set()
        #: The torch call the dispatch is running (a serial number; None between calls) on
        #: ``call_thread``, and the user line found for it. Every probe hook of one call, and
        #: every saved-tensor hook inside it (a convolution saves its input and its weight),
        #: asks for the same line: the stack is walked once per call, not once per question.
        self.call: int | None = None
        self.call_thread: int | None = None
        #: Called with a probe that was switched off (the dispatch forgets it).
        self.on_switch_off: list[Any] = []
        self._site_call: int | None = None
        self._call_site: Site | None = None

    # -- where ------------------------------------------------------------------------------
    def site(self) -> Site | None:
        """The user line that is running now (the innermost frame outside torch/torchlint)."""
        call = self.call
        if call is None or threading.get_ident() != self.call_thread:
            return self.frames.user_site(sys._getframe(1))
        # Inside one torch call no user code runs (autograd.Function.apply is no torch
        # function, and a module call is none): the line cannot change until it returns.
        if call != self._site_call:
            self._call_site = self.frames.user_site(sys._getframe(1))
            self._site_call = call
        return self._call_site

    @staticmethod
    def source(site: Site | None) -> str:
        if site is None:
            return ""
        return linecache.getline(site.path, site.line).strip()

    def device_name(self, device: Any) -> str:
        return self.device.device_name(device)

    # -- what -------------------------------------------------------------------------------
    def observed(self, probe: Probe, code: str, site: Site | None, note: str = "") -> None:
        """The probe checked ``code``'s condition at ``site`` (used for "not reproduced")."""
        if site is None:
            return
        key = (code, site.path, site.line)
        if key in self._observed:
            return
        self._observed.add(key)
        self.events.emit("observed", probe=probe.name, code=code, path=site.path, line=site.line, note=note)

    def evidence(
        self,
        probe: Probe,
        *,
        code: str | None,
        at: Site | None,
        message: str,
        sites: Iterable[Site | None] = (),
        runtime_code: str | None = None,
        data: dict[str, Any] | None = None,
        confirm_only: bool = False,
    ) -> bool:
        """Report a problem seen at ``at``. ``sites`` are the lines where a static finding of
        ``code`` would be the same problem (e.g. the factory line for a device mismatch).
        ``confirm_only``: evidence for a static finding there, but no runtime-only finding
        without one (the static rule chose to leave such code alone).
        Returns False when the same problem at the same line was already reported."""
        where = (at.path, at.line) if at else None
        key = (probe.name, code, runtime_code, where, message)
        if key in self._reported:
            return False
        self._reported.add(key)
        self.events.emit(
            "evidence",
            probe=probe.name,
            code=code,
            runtime_code=None if confirm_only else runtime_code or probe.runtime_code,
            message=message,
            at=list(where) if where else None,
            sites=[[s.path, s.line] for s in sites if s is not None],
            data=data or {},
        )
        return True

    def publish(self, probe: Probe, data: dict[str, Any]) -> None:
        """The probe's summary for the report (JSON-able): the JSON report holds it under the
        probe's name, and the probe's plugin renders it (``torchlint_run_section``)."""
        self.events.emit("probe-result", probe=probe.name, data=data)

    @staticmethod
    def note(exc: BaseException, text: str) -> None:
        """What torchlint knows of an exception the program will see: printed after its
        traceback ("torchlint: TEXT"), never inside the message the program can read."""
        try:
            exc.__torchlint_note__ = text  # type: ignore[attr-defined]
        except (AttributeError, TypeError):
            pass

    @staticmethod
    def explain(exc: BaseException, code: str) -> None:
        """Mark an exception as explained by evidence already reported (no separate TL702)."""
        try:
            exc.__torchlint_explained__ = code  # type: ignore[attr-defined]
        except (AttributeError, TypeError):
            pass

    def switch_off(self, probe: Probe, where: str, exc: BaseException) -> None:
        """``probe`` raised in ``where``: report it (TL707) and stop calling it, everywhere."""
        if probe.switched_off:
            return
        probe.switched_off = True
        self.probe_crashed(probe, where, exc)
        for forget in self.on_switch_off:
            forget(probe)

    def probe_crashed(self, probe: Probe, where: str, exc: BaseException) -> None:
        frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        origin = f" at {os.path.basename(frame.filename)}:{frame.lineno}" if frame else ""
        self.events.emit(
            "probe-crashed",
            probe=probe.name,
            message=f"probe {probe.name!r} raised {type(exc).__name__}: {exc}{origin} in {where}; it is off for the rest of the run",
        )


def passes_tensor(tensor: Any) -> Any:
    """A pack hook's fallback: the tensor saved as autograd would save it."""
    return tensor


_HOOKS = ("before", "after", "failed")


class ProbeDispatch(TorchFunctionMode):
    """One mode for all probes: a per-function table of the probe methods that want it.

    A Python mode costs every torch call about a microsecond and a half, as much as a small
    kernel's launch, so the dispatch stays on the mode stack only while it must:

    * during an optimizer's ``step()`` it steps off, unless a watching probe wants those calls
      (``Probe.inside_optimizer_step``);
    * after each step it asks the probes whether they keep watching (``Probe.keeps_watching``);
      once none does, it leaves the stack for good and the program runs at full speed, with
      only the probes' cheap hooks (module, optimizer, ``raised``) left.
    """

    def __init__(self, probes: list[Probe], ctx: ProbeContext) -> None:
        super().__init__()
        self.ctx = ctx
        #: Probes whose watch is not over (each is asked ``keeps_watching`` after every step).
        self.watching = list(probes)
        self.probes = [p for p in probes if any(_overrides(p, hook) for hook in (*_HOOKS, "watches"))]
        self._table: dict[Any, tuple[tuple, tuple, tuple]] = {}
        self.pushed = False  # on the torch-function mode stack now
        self.retired = False  # every watch is over: never back on the stack
        self._suspended = False  # stepped off for an optimizer's step()
        self._step_hooks: list[Any] = []
        self._window_hook: Any = None
        self._ended = 0
        #: Steps after which no probe watched any more (None: they watched to the end).
        self.watched_steps: int | None = None
        self.thread: int | None = None
        ctx.on_switch_off.append(self._forget)
        self._calls = 0  # torch calls seen: each one's number names it for ``ProbeContext.site``

    # -- on and off the mode stack ------------------------------------------------------------
    def __enter__(self) -> ProbeDispatch:
        self.thread = self.ctx.call_thread = threading.get_ident()
        if not self.watching:  # no probe at all: nothing to watch
            self.retired = True
            return self
        super().__enter__()
        self.pushed = True
        self._step_hooks = [
            optimizer_hooks.register_optimizer_step_pre_hook(self._step_begins),
            optimizer_hooks.register_optimizer_step_post_hook(self._step_ends),
        ]
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        for handle in self._step_hooks:
            handle.remove()
        self._step_hooks = []
        if self._window_hook is not None:
            self._window_hook.remove()
            self._window_hook = None
        if self.pushed:
            _remove_from_stack(self)
            self.pushed = False

    def _step_begins(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        # The mode stack is per thread: only the target's thread has this mode on it.
        if not self.pushed or threading.get_ident() != self.thread:
            return
        if any(p.inside_optimizer_step for p in self.probes):
            return
        if step_closure(args, kwargs):
            return  # step(closure) runs the program's forward and backward (LBFGS): watched
        stack = torch._C._len_torch_function_stack()
        if stack and torch._C._get_function_stack_at(stack - 1) is self:
            torch._C._pop_torch_function_stack()
            self.pushed = False
            self._suspended = True

    def _step_ends(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        # A step() that raised leaves the dispatch off until the next step() ends: only a
        # program that catches an optimizer's error and trains on loses calls to it.
        if self._suspended and threading.get_ident() == self.thread:
            self._suspended = False
            if not self.retired:
                torch._C._push_on_torch_function_stack(self)
                self.pushed = True

    # -- the watch window -----------------------------------------------------------------------
    def advance(self, steps: int) -> None:
        """``steps`` steps have ended. The probes are asked at the next module call: the step
        counter calls this from inside an optimizer's hook loop, where a probe could not
        remove its own optimizer hooks (and what follows the step, logging, the next batch,
        still belongs to it)."""
        if self.retired:
            return
        self._ended = steps
        if self._window_hook is None:
            self._window_hook = module_hooks.register_module_forward_pre_hook(self._close_window)

    def _close_window(self, module: Any, args: Any) -> None:
        if threading.get_ident() != self.thread:
            return
        if not self.pushed or not _on_stack(self):
            return  # a module call a probe makes off the stack (a replay): the next one
        self._window_hook.remove()
        self._window_hook = None
        self.ask(self._ended)

    def ask(self, steps: int) -> None:
        """Probes whose watch is over after ``steps`` steps stop watching; once none watches
        any more, the dispatch leaves the mode stack."""
        stopping = []
        for probe in list(self.watching):
            try:
                keeps = probe.keeps_watching(steps)
            except Exception as exc:
                self.disable(probe, "keeps_watching", exc)
                continue
            if not keeps:
                stopping.append(probe)
        # Last installed, first stopped: hooks that nest (saved-tensor hooks) come off in order.
        for probe in reversed(stopping):
            self.watching.remove(probe)
            if probe in self.probes:
                self.probes.remove(probe)
                self._table.clear()
            try:
                probe.stop_watching()
            except Exception as exc:
                self.ctx.probe_crashed(probe, "stop_watching", exc)
        if not self.watching and not self.retired:
            self.retire()
            self.watched_steps = steps
            self.ctx.progress(f"the probes watched {steps} step{'s' * (steps != 1)}; the program runs on without "
                              "them between it and torch (--watch-steps)")

    def retire(self) -> None:
        """Off the stack for the rest of the run."""
        self.retired = True
        for handle in self._step_hooks:  # from a module hook: no optimizer hook loop runs
            handle.remove()
        self._step_hooks = []
        self._suspended = False
        if self.pushed:
            _remove_from_stack(self)
            self.pushed = False

    # -- each torch call ----------------------------------------------------------------------
    def _entry(self, func: Any) -> tuple[tuple, tuple, tuple]:
        wanted = [p for p in self.probes if self._safe_watches(p, func)]
        entry = tuple(tuple(getattr(p, hook) for p in wanted if _overrides(p, hook)) for hook in _HOOKS)
        try:
            self._table[func] = entry
        except TypeError:  # an unhashable callable: decide each time
            pass
        return entry  # type: ignore[return-value]

    def _safe_watches(self, probe: Probe, func: Any) -> bool:
        try:
            return bool(probe.watches(func))
        except Exception as exc:
            self.disable(probe, "watches", exc)
            return False

    def disable(self, probe: Probe, where: str, exc: BaseException) -> None:
        self.ctx.switch_off(probe, where, exc)

    def _forget(self, probe: Probe) -> None:
        """A probe that was switched off sees no more calls."""
        if probe in self.probes:
            self.probes.remove(probe)
            self._table.clear()
        if probe in self.watching:
            self.watching.remove(probe)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        ctx = self.ctx
        outer = ctx.call
        self._calls += 1
        ctx.call = self._calls  # names this call for ProbeContext.site
        try:
            entry = self._table.get(func)
            if entry is None:
                entry = self._entry(func)
            befores, afters, faileds = entry
            if not (befores or afters or faileds):
                return func(*args, **kwargs)
            # What the probes do to look (a value check's `bool`, a `.item()`) is not the
            # program's work: the device mode's sync count must not see it.
            syncs = getattr(ctx.device, "syncs", None)
            if befores:
                self._run(befores, "before", syncs, func, args, kwargs)
            try:
                result = func(*args, **kwargs)
            except Exception as exc:
                if faileds:
                    self._run(faileds, "failed", syncs, func, args, kwargs, exc)
                raise
            if afters:
                self._run(afters, "after", syncs, func, args, kwargs, result)
            return result
        finally:
            ctx.call = outer

    def _run(self, hooks: tuple, where: str, syncs: Any, *arguments: Any) -> None:
        if syncs is not None:
            syncs.paused += 1
        try:
            for hook in hooks:
                try:
                    hook(*arguments)
                except Exception as exc:
                    self.disable(hook.__self__, where, exc)
        finally:
            if syncs is not None:
                syncs.paused -= 1


def _on_stack(mode: TorchFunctionMode) -> bool:
    return any(torch._C._get_function_stack_at(i) is mode for i in range(torch._C._len_torch_function_stack()))


def _remove_from_stack(mode: TorchFunctionMode) -> None:
    """Take ``mode`` off this thread's torch-function mode stack, wherever it is (a mode the
    program pushed later may sit above it), and put the ones above back in their order."""
    above = []
    while torch._C._len_torch_function_stack():
        top = torch._C._pop_torch_function_stack()
        if top is mode:
            break
        above.append(top)
    for other in reversed(above):
        torch._C._push_on_torch_function_stack(other)


class WarningDispatch:
    """Hands each warning the target triggers to the probes that take ``warned``."""

    def __init__(self, probes: list[Probe], ctx: ProbeContext) -> None:
        self.ctx = ctx
        self.probes = [p for p in probes if _overrides(p, "warned")]

    def __call__(self, warning: TargetWarning) -> None:
        for probe in list(self.probes):
            if probe.switched_off:
                continue
            try:
                probe.warned(warning)
            except Exception as exc:
                self.probes.remove(probe)
                self.ctx.switch_off(probe, "warned", exc)


def _overrides(probe: Probe, hook: str) -> bool:
    return getattr(type(probe), hook) is not getattr(Probe, hook)


def tensors_in(args: tuple, kwargs: dict) -> Iterable[torch.Tensor]:
    """Tensor arguments, including those inside a list or tuple argument (torch.cat)."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, torch.Tensor):
                    yield item
