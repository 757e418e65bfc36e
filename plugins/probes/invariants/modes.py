"""Model modes seen at run time: a module in ``eval()`` that still drops activations (TL748),
and a spectral-normalised layer evaluated before it ever ran in training mode (TL749).

Both patch one function for the whole run (no per-operation mode): ``F.dropout`` and its
1d/2d/3d forms, and the forward pre-hook of ``torch.nn.utils.spectral_norm``. Inside code
Dynamo traces the patches only call through (``torch.compiler.is_compiling()`` is a constant
there), so they add nothing to a compiled graph.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from torchlint.probe import Patches, Probe

_is_compiling = torch.compiler.is_compiling

#: Functional dropouts whose ``training`` argument defaults to True, whatever the module's mode.
DROPOUTS = ("dropout", "dropout1d", "dropout2d", "dropout3d")


class ModeProbe(Probe):
    name = "modes"
    order = 56
    runtime_code = "TL748"
    summary = "dropout that runs in eval() mode, spectral_norm layers evaluated untrained"

    def install(self) -> None:
        self.patches = Patches()
        for name in DROPOUTS:
            self.patches.replace(F, name, self._dropout)
        spectral_norm_module = importlib.import_module("torch.nn.utils.spectral_norm")
        sn = spectral_norm_module.SpectralNorm
        load_hook = spectral_norm_module.SpectralNormLoadStateDictPreHook
        self.trained: set[int] = set()  # SpectralNorm hooks that ran in a training-mode forward
        self.loaded: set[int] = set()  # ...whose module's state was loaded
        self.patches.replace(sn, "__call__", self._spectral_norm_call)
        self.patches.replace(load_hook, "__call__", self._spectral_norm_load)

    def uninstall(self) -> None:
        self.patches.restore()

    # -- dropout in eval() -------------------------------------------------------------------
    def _dropout(self, original: Any) -> Any:
        check = self.guarded(self._check_dropout)

        def dropout(*args: Any, **kwargs: Any) -> Any:
            # An evaluation runs without grad; a training forward (grad on) costs one check.
            if not _is_compiling() and not torch.is_grad_enabled():
                check(sys._getframe(1), args, kwargs)
            return original(*args, **kwargs)

        dropout.__wrapped__ = original  # type: ignore[attr-defined]
        dropout.__name__ = original.__name__
        dropout.__doc__ = original.__doc__
        return dropout

    def _check_dropout(self, frame: Any, args: tuple, kwargs: dict) -> None:
        training = kwargs.get("training", args[2] if len(args) > 2 else True)
        p = kwargs.get("p", args[1] if len(args) > 1 else 0.5)
        if training is not True or not isinstance(p, (int, float)) or p <= 0:
            return
        module = frame.f_locals.get("self")
        if not isinstance(module, nn.Module) or module.training:
            return
        site = self.ctx.frames.user_site(frame)
        self.ctx.evidence(
            self, code=None, at=site, runtime_code="TL748",
            message=(
                f"dropout (p={p:g}) ran with training=True inside `{type(module).__name__}`, which is in eval() mode: "
                "`F.dropout` does not follow the module's mode, so evaluation drops activations at random; pass "
                "`training=self.training`, or use an `nn.Dropout` layer"
            ),
            data={"module": type(module).__name__, "p": p},
        )

    # -- spectral_norm evaluated before training ---------------------------------------------
    def _spectral_norm_call(self, original: Any) -> Any:
        probe = self
        check = self.guarded(self._check_spectral_norm)

        def call(hook: Any, module: nn.Module, inputs: Any) -> Any:
            if not _is_compiling() and not probe.switched_off:
                check(hook, module)
            return original(hook, module, inputs)

        return call

    def _check_spectral_norm(self, hook: Any, module: nn.Module) -> None:
        if module.training:
            self.trained.add(id(hook))
            return
        if id(hook) in self.trained or id(hook) in self.loaded:
            return
        self.ctx.evidence(
            self, code=None, at=self.ctx.site(), runtime_code="TL749",
            message=(
                f"`{type(module).__name__}` (spectral_norm on `{hook.name}`) ran in eval() mode before any training-mode "
                "forward: its estimate of the largest singular value is still the random start, so the weight is "
                "divided by the wrong value; run a training-mode forward first, or use "
                "`torch.nn.utils.parametrizations.spectral_norm`, which iterates when it is applied"
            ),
            data={"module": type(module).__name__},
        )

    def _spectral_norm_load(self, original: Any) -> Any:
        probe = self

        def call(hook: Any, *args: Any, **kwargs: Any) -> Any:
            probe.loaded.add(id(hook.fn))
            return original(hook, *args, **kwargs)

        return call
