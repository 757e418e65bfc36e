"""Model modes seen at run time: a module in ``eval()`` that still computes at random (TL748),
and a spectral-normalised layer evaluated before it ever ran in training mode (TL749).

A module's mode reaches only the layers that read it: a functional call decides from its own
arguments. So each functional stochastic op is watched by what it is told to do, whatever way
the code reached it: the dropout family (`F.dropout` and its 1d/2d/3d forms, whose `training`
defaults to True; `F.alpha_dropout`, `F.feature_alpha_dropout`, `torch.dropout` told to
train), attention's `dropout_p` (`F.scaled_dot_product_attention` with `dropout_p > 0`),
and `F.rrelu(training=True)`, each inside a module in ``eval()`` while
gradients are off (an evaluation). Each patch replaces one function for the whole run (no
per-operation mode); inside code Dynamo traces the patches only call through
(``torch.compiler.is_compiling()`` is a constant there), so they add nothing to a compiled graph.
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


def _argument(args: tuple, kwargs: dict, name: str, index: int, default: Any) -> Any:
    return kwargs[name] if name in kwargs else args[index] if len(args) > index else default


def _positive(p: Any) -> float | None:
    return p if isinstance(p, (int, float)) and p > 0 else None


def _rate_when(flag: str, default_training: bool, default_p: float) -> Any:
    """How `(input, p, <flag>)` says it computes at random: its p when the flag (at position 2)
    is True, else None."""
    def rate(args: tuple, kwargs: dict) -> float | None:
        if _argument(args, kwargs, flag, 2, default_training) is not True:
            return None
        return _positive(_argument(args, kwargs, "p", 1, default_p))

    return rate


def _attention_rate(args: tuple, kwargs: dict) -> float | None:
    """`scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, ...)`."""
    return _positive(_argument(args, kwargs, "dropout_p", 4, 0.0))


def _rrelu_random(args: tuple, kwargs: dict) -> float | None:
    """`F.rrelu(input, lower, upper, training=False)`: random slopes only when told to train."""
    return 1.0 if _argument(args, kwargs, "training", 3, False) is True else None


#: (owner, function name, how the call says it computes at random (a rate, or None), its words)
STOCHASTIC = (
    *((F, name, _rate_when("training", True, 0.5), "dropout") for name in DROPOUTS),
    (F, "alpha_dropout", _rate_when("training", False, 0.5), "alpha dropout"),
    (F, "feature_alpha_dropout", _rate_when("training", False, 0.5), "feature alpha dropout"),
    (torch, "dropout", _rate_when("train", False, 0.0), "dropout"),
    (F, "scaled_dot_product_attention", _attention_rate, "attention dropout"),
    (F, "rrelu", _rrelu_random, "RReLU with random slopes"),
)
# Not watched: sampling (`torch.bernoulli`, `multinomial`, `randn_like`) inside a model in
# eval(): generating samples from a trained model is random on purpose.


class ModeProbe(Probe):
    name = "modes"
    order = 56
    runtime_code = "TL748"
    summary = "dropout that runs in eval() mode, spectral_norm layers evaluated untrained"

    def install(self) -> None:
        self.patches = Patches()
        for owner, name, rate, words in STOCHASTIC:
            self.patches.replace(owner, name, lambda original, rate=rate, words=words: self._stochastic(original, rate, words))
        spectral_norm_module = importlib.import_module("torch.nn.utils.spectral_norm")
        sn = spectral_norm_module.SpectralNorm
        load_hook = spectral_norm_module.SpectralNormLoadStateDictPreHook
        self.trained: set[int] = set()  # SpectralNorm hooks that ran in a training-mode forward
        self.loaded: set[int] = set()  # ...whose module's state was loaded
        self.patches.replace(sn, "__call__", self._spectral_norm_call)
        self.patches.replace(load_hook, "__call__", self._spectral_norm_load)

    def uninstall(self) -> None:
        self.patches.restore()

    # -- random computation in eval() -------------------------------------------------------
    def _stochastic(self, original: Any, rate: Any, words: str) -> Any:
        check = self.guarded(self._check_stochastic)

        def stochastic(*args: Any, **kwargs: Any) -> Any:
            # An evaluation runs without grad; a training forward (grad on) costs one check.
            if not _is_compiling() and not torch.is_grad_enabled():
                check(sys._getframe(1), original.__name__, rate(args, kwargs), words, kwargs, args)
            return original(*args, **kwargs)

        stochastic.__wrapped__ = original  # type: ignore[attr-defined]
        stochastic.__name__ = original.__name__
        stochastic.__doc__ = original.__doc__
        return stochastic

    def _check_stochastic(self, frame: Any, name: str, p: float | None, words: str, kwargs: dict, args: tuple) -> None:
        if p is None:
            return
        module = frame.f_locals.get("self")
        if not issubclass(type(module), nn.Module) or module.training:
            return
        site = self.ctx.frames.user_site(frame)
        if name in DROPOUTS:
            how = (f"dropout (p={p:g}) ran with training=True inside `{type(module).__name__}`, which is in eval() mode: "
                   "`F.dropout` does not follow the module's mode, so evaluation drops activations at random; pass "
                   "`training=self.training`, or use an `nn.Dropout` layer")
        elif name == "scaled_dot_product_attention":
            how = (f"attention dropout (dropout_p={p:g}) ran inside `{type(module).__name__}`, which is in eval() mode: "
                   "`scaled_dot_product_attention` does not follow the module's mode, so evaluation drops attention "
                   "weights at random; pass `dropout_p=self.dropout if self.training else 0.0`")
        else:
            rate = f" (p={p:g})" if name in ("dropout", "alpha_dropout", "feature_alpha_dropout") else ""
            how = (f"{words}{rate} (`{name}`) ran inside `{type(module).__name__}`, which is in eval() mode: the call "
                   "does not follow the module's mode, so the evaluation is random; make it depend on `self.training`")
        self.ctx.evidence(self, code=None, at=site, runtime_code="TL748", message=how,
                          data={"module": type(module).__name__, "p": p, "function": name})

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
