"""The model a program runs, the callables it compiles, and the inputs of their first calls,
captured without a code change.

A global forward pre-hook sees every ``nn.Module`` call; the first call at depth 0 of a
module with parameters (the same "outermost module" ``--steps`` counts) is the model. Its
inputs are cloned (detached) at the first call and at the next calls whose shapes differ,
up to ``max_signatures``, so the compile probe can replay a changing batch size. The
callables the program compiles itself are told of by ``compiled_regions`` at each call
(torchlint's hooks are out of Dynamo's sight then, this one included): ``ProgramCompiles``.
Used by the compile and profile probes; child process only.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.nn.modules import module as module_hooks


def _clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, tuple):
        return tuple(_clone(v) for v in value)
    if isinstance(value, list):
        return [_clone(v) for v in value]
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    return value


def signature(value: Any) -> Any:
    """Shapes and dtypes of the tensors in ``value`` (what makes Dynamo recompile)."""
    if isinstance(value, torch.Tensor):
        return ("T", tuple(value.shape), str(value.dtype))
    if isinstance(value, (tuple, list)):
        return tuple(signature(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, signature(v)) for k, v in sorted(value.items(), key=lambda kv: str(kv[0])))
    return type(value).__name__


def describe_inputs(args: tuple, kwargs: dict) -> str:
    """`(Tensor[32, 3, 28, 28] float32)` for messages."""
    parts = [_describe(a) for a in args] + [f"{k}={_describe(v)}" for k, v in kwargs.items()]
    return "(" + ", ".join(parts) + ")"


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"Tensor{list(value.shape)} {str(value.dtype).replace('torch.', '')}"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_describe(v) for v in value) + "]"
    return type(value).__name__


class ModelCapture:
    """Records the outermost module with parameters and (clones of) its first inputs."""

    def __init__(self, max_signatures: int = 3, clone_inputs: bool = True) -> None:
        self.max_signatures = max_signatures
        self.clone_inputs = clone_inputs
        self.model: torch.nn.Module | None = None
        self.calls: list[tuple[tuple, dict]] = []  # (args, kwargs) per distinct signature
        self.call_count = 0
        self._signatures: set[Any] = set()
        self._depth = 0
        self._handles: list[Any] = []
        self.listeners: list[Any] = []  # called as listener(module, args, kwargs) at depth 0, before forward

    def install(self) -> None:
        self._handles = [
            module_hooks.register_module_forward_pre_hook(self._enter),
            module_hooks.register_module_forward_hook(self._leave, always_call=True),
        ]

    def uninstall(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    @property
    def root(self) -> torch.nn.Module | None:
        """The model without a ``torch.compile`` wrapper the program may have put around it."""
        model = self.model
        return getattr(model, "_orig_mod", model) if model is not None else None

    def _enter(self, module: Any, args: tuple) -> None:
        # Global hooks see positional arguments only; keyword arguments are not captured.
        kwargs: dict = {}
        self._depth += 1
        if self._depth != 1:
            return
        if self.model is None:
            if next(module.parameters(), None) is None:
                return
            self.model = module
        if module is not self.model:
            return
        self.call_count += 1
        for listener in self.listeners:
            listener(module, args, kwargs)
        if len(self.calls) >= self.max_signatures:
            return
        sig = signature((args, kwargs))
        if sig in self._signatures:
            return
        self._signatures.add(sig)
        if self.clone_inputs:
            with torch.no_grad():
                self.calls.append((_clone(args), _clone(kwargs)))
        else:
            self.calls.append((args, kwargs))

    def _leave(self, module: Any, args: Any, output: Any) -> None:
        self._depth = max(0, self._depth - 1)


class CompiledTarget:
    """One callable the program compiled: what it compiled, how, where, and its inputs."""

    def __init__(self, target: Any, compiled_with: dict, defined_at: Any, called_at: Any) -> None:
        self.target = target
        compiled_with = dict(compiled_with)
        #: torch.compile's default backend is Inductor; a backend the program passes as a
        #: callable is its own (named, not climbed to).
        backend = compiled_with.pop("backend", None) or "inductor"
        self.backend = backend if isinstance(backend, str) else getattr(backend, "__name__", type(backend).__name__)
        self.options = {k: v for k, v in compiled_with.items() if k in ("dynamic", "fullgraph", "mode", "options")}
        self.defined_at = defined_at
        self.called_at = called_at
        self.calls: list[tuple[tuple, dict]] = []
        self._signatures: set[Any] = set()

    @property
    def name(self) -> str:
        target = self.target
        if isinstance(target, torch.nn.Module):
            return type(target).__name__
        return getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or type(target).__name__


def _what_was_compiled(target: Any) -> Any:
    """``module.compile()`` compiles the module's bound ``_call_impl``: the module is the target."""
    owner = getattr(target, "__self__", None)
    if isinstance(owner, torch.nn.Module) and getattr(target, "__name__", "") == "_call_impl":
        return owner
    return target


class ProgramCompiles:
    """The callables the program compiled itself, in the order of their first calls, with clones
    of the inputs of their first calls (one per input signature). Fed by ``compiled_regions``."""

    def __init__(self, max_targets: int = 3, max_signatures: int = 3) -> None:
        self.max_targets = max_targets
        self.max_signatures = max_signatures
        self.targets: list[CompiledTarget] = []
        self._by_id: dict[int, CompiledTarget] = {}
        self._holds: list[Any] = []  # the compiled callables, so that their ids stay theirs
        #: Compiled callables called after ``max_targets`` others: named in the report.
        self.left_out: list[str] = []

    def note(self, call: Any) -> None:
        target = self._by_id.get(id(call.compiled))
        if target is None:
            if len(self.targets) >= self.max_targets:
                name = CompiledTarget(_what_was_compiled(call.target), {}, None, None).name
                if name not in self.left_out:
                    self.left_out.append(name)
                return
            target = CompiledTarget(_what_was_compiled(call.target), call.compiled_with, call.defined_at, call.called_at)
            self.targets.append(target)
            self._by_id[id(call.compiled)] = target
            self._holds.append(call.compiled)
        if len(target.calls) >= self.max_signatures:
            return
        sig = signature((call.args, call.kwargs))
        if sig in target._signatures:
            return
        target._signatures.add(sig)
        with torch.no_grad():
            target.calls.append((_clone(call.args), _clone(call.kwargs)))
