"""Whether the gradients one optimizer step used were cleared before the next backward pass
added to them (TL745), read on the parameters themselves.

After a read step, each parameter the optimizer holds gets a gradient hook; autograd calls it
before it adds a new gradient into ``.grad``, so the hook sees what was there. The step's own
gradient, untouched, means nothing cleared it. ``None`` or zeros mean something did, and from
then on the parameter is settled until the next step: gradient accumulation (several backward
passes between two steps) adds to a cleared gradient, which is right. A backward pass that
adds to the gradient before it is cleared later (a GAN's generator loss reaching the
discriminator's parameters, cleared by ``netD.zero_grad()`` before the discriminator's own
backward) is right too: only what the next step finds counts.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch


class ClearingWatch:
    """One parameter's gradient between an optimizer step and the next."""

    __slots__ = ("param", "grad", "version", "arrived", "cleared", "handle", "__weakref__")

    def __init__(self, param: torch.Tensor) -> None:
        self.param = weakref.ref(param)
        grad = param.grad
        self.grad = weakref.ref(grad) if grad is not None else None
        self.version = grad._version if grad is not None else -1
        self.arrived = False
        self.cleared = grad is None
        self.handle: Any = None

    def gradient_arrives(self, incoming: torch.Tensor) -> None:
        """Autograd's hook: ``incoming`` is about to be added into ``.grad``."""
        if self.cleared:
            return
        self.arrived = True
        param = self.param()
        old = param.grad if param is not None else None
        if old is None:
            self.cleared = True
        elif self.grad is not None and self.grad() is old and old._version == self.version:
            pass  # the step's own gradient, as the step left it
        else:
            # Written since the step: zeroed in place (`zero_grad(set_to_none=False)`), or
            # added to by another backward pass; only zeros mean cleared.
            with torch._C.DisableTorchFunction(), torch.no_grad():
                self.cleared = not bool(old.detach().any())

    @property
    def stale(self) -> bool:
        """A backward pass added to the last step's gradient, and nothing cleared it since."""
        return self.arrived and not self.cleared

    def remove(self) -> None:
        if self.handle is not None:
            self.handle.remove()
            self.handle = None


def watch(param: torch.Tensor, guard: Any) -> ClearingWatch | None:
    """A watch on ``param``'s next gradients, or None for a parameter autograd gives none."""
    if not param.requires_grad or param.grad is None:
        return None
    clearing = ClearingWatch(param)
    # The hook holds the watch weakly: the parameter keeps its hooks, and the watch must not
    # keep the parameter alive through them.
    ref = weakref.ref(clearing)

    def arrives(incoming: torch.Tensor) -> None:
        target = ref()
        if target is not None:
            target.gradient_arrives(incoming)

    clearing.handle = param.register_hook(guard(arrives))
    return clearing
