"""Counting optimizer steps and top-level forward calls, and stopping after ``--steps N``.

Global hooks only (``register_optimizer_step_post_hook``, module forward hooks): the user's
optimizer and model classes are not touched. Forward calls count only when no optimizer
exists, so a training loop stops after its N-th step, not in the middle of it.

Only the thread that runs the target (the one that installs the counter) counts: a background
thread running its own forward calls or steps must neither inflate the numbers nor be the one
that stops (an exception there would end that thread, not the program).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable

import torch
from torch.nn.modules import module as module_hooks
from torch.optim import optimizer as optimizer_hooks


class StepLimitReached(BaseException):
    """Raised to stop the target; a BaseException so ``except Exception`` cannot swallow it."""


def on_optimizer_created(callback: Callable[[], None], made: Callable[[Any], None] | None = None) -> Callable[[], None]:
    """Call `callback` whenever an optimizer is constructed, so that a step can mean an
    optimizer step once one exists (most scripts build it before the first forward), not a
    forward call; and ``made`` with the optimizer once it is. Returns the function that undoes this."""
    original = torch.optim.Optimizer.__init__

    def init_and_note(optimizer: Any, *args: Any, **kwargs: Any) -> None:
        callback()
        original(optimizer, *args, **kwargs)
        if made is not None:
            made(optimizer)

    torch.optim.Optimizer.__init__ = init_and_note  # type: ignore[method-assign]

    def restore() -> None:
        torch.optim.Optimizer.__init__ = original  # type: ignore[method-assign]

    return restore


def step_closure(args: Any, kwargs: Any) -> bool:
    """Whether the ``step()`` an optimizer step hook sees got a closure (the hook's args are
    step's own, the optimizer first): LBFGS's step runs the program's forward and backward."""
    return (len(args) > 1 and args[1] is not None) or kwargs.get("closure") is not None


def _versions(optimizer: Any) -> tuple:
    """The version counters of an optimizer's parameters: an in-place update bumps them."""
    return tuple(p._version for group in optimizer.param_groups for p in group["params"])


def _progress_worthy(count: int) -> bool:
    return count <= 10 or count % 100 == 0


class StepCounter:
    def __init__(self, limit: int | None, on_progress: Callable[[str, int, int], None],
                 on_step: Callable[[int], None] | None = None) -> None:
        self.limit = limit
        #: Called with the number of steps ended, after each one (the probes' watch window).
        self.on_step = on_step
        self.optimizer_steps = 0
        self.forward_calls = 0
        self._on_progress = on_progress
        self._depth = 0
        self._optimizer_seen = False
        self._handles: list[Any] = []
        self._restore_optimizer_init: Callable[[], None] | None = None
        self._thread: int | None = None
        self.stopped = False  # the limit was reached and the target told to stop
        #: The program's optimizers, whose steps inside a compiled function no hook sees.
        self._optimizers: weakref.WeakSet = weakref.WeakSet()
        self._versions: dict[int, tuple] = {}

    def install(self) -> None:
        self._thread = threading.get_ident()
        self._handles = [
            optimizer_hooks.register_optimizer_step_post_hook(self._after_step),
            module_hooks.register_module_forward_pre_hook(self._enter_forward),
            module_hooks.register_module_forward_hook(self._leave_forward, always_call=True),
        ]
        self._restore_optimizer_init = on_optimizer_created(self._note_optimizer, self._optimizers.add)

    def uninstall(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        if self._restore_optimizer_init is not None:
            self._restore_optimizer_init()
            self._restore_optimizer_init = None

    def as_dict(self) -> dict[str, int]:
        return {"optimizer_steps": self.optimizer_steps, "forward_calls": self.forward_calls}

    # -- hooks ------------------------------------------------------------------------------
    def _note_optimizer(self) -> None:
        if threading.get_ident() == self._thread:
            self._optimizer_seen = True

    def _stop(self, what: str) -> None:
        self.stopped = True
        raise StepLimitReached(what)

    def _after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if threading.get_ident() != self._thread:
            return
        self._optimizer_seen = True
        self.optimizer_steps += 1
        if _progress_worthy(self.optimizer_steps):
            self._on_progress("step", self.optimizer_steps, self.forward_calls)
        if self.on_step is not None:
            self.on_step(self.optimizer_steps)
        if self.limit is not None and self.optimizer_steps >= self.limit:
            self._stop(f"{self.optimizer_steps} optimizer steps")

    def before_compiled_call(self, call: Any) -> None:
        """A compiled callable is about to run, with this counter's hooks out of Dynamo's sight
        (``compiled_regions``): note where each optimizer's parameters are."""
        if threading.get_ident() == self._thread:
            self._versions = {id(opt): _versions(opt) for opt in list(self._optimizers)}

    def after_compiled_call(self, call: Any) -> None:
        """The compiled call returned: an optimizer whose parameters changed in place stepped
        inside it (a compiled training step), and a compiled module's call is a forward call.
        Both are counted here, where a limit may stop the program."""
        for optimizer in list(self._optimizers):
            before = self._versions.get(id(optimizer))
            if before is not None and before != _versions(optimizer):
                self._after_step(optimizer, (optimizer,), {})
        module = call.target
        owner = getattr(module, "__self__", None)  # module.compile() compiles its bound _call_impl
        if isinstance(owner, torch.nn.Module):
            module = owner
        if isinstance(module, torch.nn.Module):
            self._enter_forward(module, call.args)
            self._leave_forward(module, call.args, None)

    def _enter_forward(self, module: Any, args: Any) -> None:
        if threading.get_ident() == self._thread:
            self._depth += 1

    def _leave_forward(self, module: Any, args: Any, output: Any) -> None:
        if threading.get_ident() != self._thread:
            return
        self._depth -= 1
        # Loss modules are top-level calls too; only a module with parameters is "the model".
        if self._depth != 0 or next(module.parameters(), None) is None:
            return
        self.forward_calls += 1
        if not self._optimizer_seen:
            if _progress_worthy(self.forward_calls):
                self._on_progress("forward", self.optimizer_steps, self.forward_calls)
            if self.on_step is not None:
                self.on_step(self.forward_calls)
        if self.limit is not None and not self._optimizer_seen and self.forward_calls >= self.limit:
            self._stop(f"{self.forward_calls} forward calls")
