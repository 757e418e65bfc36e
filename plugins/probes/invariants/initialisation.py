"""Loaded weights overwritten by an initialisation (TL751).

``torch.nn.init``'s functions are patched for the run; ``Module.load_state_dict`` marks the
parameters it loaded. An initialisation of a marked parameter before the first optimizer step
throws the loaded values away. Initialisations inside a module's constructor (its
``reset_parameters()``) come before any load and are not counted; after the first step the
patches stand aside (re-initialising units mid-training is a deliberate technique).
"""

from __future__ import annotations

import sys
from typing import Any

import torch
from torch import nn
from torch.optim import optimizer as optimizer_hooks

from torchlint.probe import Patches, Probe, Site

_is_compiling = torch.compiler.is_compiling

#: torch.nn.init's public in-place initialisers.
INITIALISERS = (
    "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_", "xavier_uniform_",
    "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
)


class InitialisationProbe(Probe):
    name = "initialisation"
    order = 58
    runtime_code = "TL751"
    summary = "initialisations that overwrite loaded weights"

    def install(self) -> None:
        self.loaded: dict[int, Site | None] = {}  # id(param) -> the line that loaded it
        #: (path, line, initialiser) -> [its site, the load's site, parameters it overwrote]
        self.overwritten: dict[tuple, list] = {}
        self.stepped = False
        self.depth = 0  # an initialiser calling another counts once
        self.patches = Patches()
        for name in INITIALISERS:
            self.patches.replace(nn.init, name, lambda original, name=name: self._initialiser(name, original))
        self.patches.replace(nn.Module, "load_state_dict", self._load)
        self.handle = optimizer_hooks.register_optimizer_step_pre_hook(self.guarded(self._first_step))

    def uninstall(self) -> None:
        self.handle.remove()
        self.patches.restore()
        self._report()

    def _first_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if not self.stepped:
            self.stepped = True
            self.loaded.clear()
            self._report()

    def _initialiser(self, name: str, original: Any) -> Any:
        probe = self
        check = self.guarded(self._check_init)

        def initialise(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            if _is_compiling() or probe.stepped or probe.depth or not probe.loaded or probe.switched_off:
                return original(tensor, *args, **kwargs)
            probe.depth += 1
            try:
                check(name, tensor, sys._getframe(1))
                return original(tensor, *args, **kwargs)
            finally:
                probe.depth -= 1

        initialise.__wrapped__ = original  # type: ignore[attr-defined]
        initialise.__name__ = original.__name__
        initialise.__doc__ = original.__doc__
        return initialise

    def _check_init(self, name: str, tensor: Any, frame: Any) -> None:
        if id(tensor) not in self.loaded:
            return
        loaded_at = self.loaded.pop(id(tensor))
        site = self.ctx.frames.user_site(frame)
        # One finding per initialising line (an `apply(init_weights)` touches every layer).
        key = (site.path, site.line, name) if site else ("", 0, name)
        entry = self.overwritten.setdefault(key, [site, loaded_at, 0])
        entry[2] += 1

    def _report(self) -> None:
        for (_, _, name), (site, loaded_at, count) in self.overwritten.items():
            where = f" at {loaded_at.short()}" if loaded_at else ""
            what = "a parameter" if count == 1 else f"{count} parameters"
            self.ctx.evidence(
                self, code=None, at=site, runtime_code="TL751",
                message=(
                    f"`nn.init.{name}` overwrote {what} that `load_state_dict`{where} had loaded: the loaded weights are "
                    "thrown away and training starts from scratch; initialise before loading, or only the layers the "
                    "checkpoint does not hold"
                ),
                sites=[loaded_at] if loaded_at else [],
                data={"initialiser": name, "parameters": count, "loaded_at": [loaded_at.path, loaded_at.line] if loaded_at else None},
            )
        self.overwritten = {}

    def _load(self, original: Any) -> Any:
        probe = self

        def load_state_dict(module: nn.Module, state_dict: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(module, state_dict, *args, **kwargs)
            if not probe.stepped and not probe.switched_off:
                probe.guarded(probe._mark_loaded)(module, state_dict)
            return result

        load_state_dict.__wrapped__ = original  # type: ignore[attr-defined]
        return load_state_dict

    def _mark_loaded(self, module: nn.Module, state_dict: Any) -> None:
        keys = set(state_dict.keys()) if hasattr(state_dict, "keys") else set()
        site = self.ctx.site()
        for name, param in module.named_parameters():
            if name in keys:
                self.loaded[id(param)] = site
