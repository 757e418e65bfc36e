"""Bytes autograd saves for backward, by user line, by module and by iteration.

Every tensor autograd saves goes through ``saved_tensors_hooks``. Only the innermost pair of
hooks sees it, so this pair wraps whatever pair was innermost when it was installed (the
autograd probe's) and hands every tensor on to it: both probes see every saved tensor.

A holder lives exactly as long as autograd keeps the saved tensor: backward frees it, a
graph kept alive keeps it. Weak references to the holders therefore tell, after each step,
how many saved bytes are still held and from which iteration. Parameters saved for
backward are not counted (they live anyway), and a storage saved twice in an iteration
(a ReLU's output, saved again by the next layer) is counted once.
"""

from __future__ import annotations

import weakref
from collections import Counter
from typing import Any, Callable

import torch

from torchlint.runtime.frames import Site

_is_compiling = torch.compiler.is_compiling
_top_hooks = torch._C._autograd._top_saved_tensors_default_hooks
_NO_FUNCTION = torch._C.DisableTorchFunction

#: Dead holders are swept from the registry at each iteration boundary, or after this many.
SWEEP_EVERY = 8192


class _Held:
    __slots__ = ("inner", "nbytes", "key", "site", "module", "iteration", "__weakref__")

    def __init__(self, inner: Any, nbytes: int, key: int, site: Site | None, module: str | None, iteration: int) -> None:
        self.inner = inner
        self.nbytes = nbytes
        self.key = key
        self.site = site
        self.module = module
        self.iteration = iteration


def _parameter(tensor: torch.Tensor) -> bool:
    """A leaf that requires grad (a parameter), or a view of one (`weight.t()` in `linear`):
    it lives whether autograd keeps it or not."""
    if tensor.requires_grad and tensor.is_leaf:
        return True
    base = tensor._base
    return base is not None and base.requires_grad and base.is_leaf


class SavedAccounting:
    """Installs the hooks; tallies per iteration; reports what is still held."""

    def __init__(self, site: Callable[[], Site | None], module: Callable[[], str | None]) -> None:
        self._site = site
        self._module = module
        self.watching = False
        self.iteration = 0
        self._inner_pack: Callable | None = None
        self._inner_unpack: Callable | None = None
        self._hooks: Any = None
        self._held: list[weakref.ref] = []
        # This iteration: storages already counted, bytes by line and by module.
        self._seen: set[int] = set()
        self._by_line: Counter = Counter()
        self._by_module: Counter = Counter()
        self._total = 0
        #: The most any one watched iteration saved, per line / module, and in all.
        self.peak_line: Counter = Counter()
        self.peak_module: Counter = Counter()
        self.peak_total = 0
        self.sites: dict[tuple[str, int], Site] = {}

    def install(self) -> None:
        top = _top_hooks(True)
        if top is not None:
            self._inner_pack, self._inner_unpack = top
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()

    def uninstall(self) -> None:
        if self._hooks is not None:
            self._hooks.__exit__(None, None, None)
            self._hooks = None

    # -- the hooks ------------------------------------------------------------------------
    def _pack(self, tensor: torch.Tensor) -> Any:
        inner = self._inner_pack(tensor) if self._inner_pack is not None else tensor
        if not self.watching or _is_compiling() or _parameter(tensor):
            return inner
        with _NO_FUNCTION():
            storage = tensor.untyped_storage()
            nbytes = storage.nbytes()
            pointer = storage.data_ptr()
        site = self._site()
        module = self._module()
        held = _Held(inner, nbytes, pointer, site, module, self.iteration)
        self._held.append(weakref.ref(held))
        if len(self._held) % SWEEP_EVERY == 0:
            self._sweep()
        # A storage without memory (meta tensors) is never the same storage twice.
        key = pointer or id(held)
        if key not in self._seen:
            self._seen.add(key)
            self._total += nbytes
            if site is not None:
                where = (site.path, site.line)
                self._by_line[where] += nbytes
                self.sites.setdefault(where, site)
            if module is not None:
                self._by_module[module] += nbytes
        return held

    def _unpack(self, packed: Any) -> torch.Tensor:
        if type(packed) is _Held:
            packed = packed.inner
        return self._inner_unpack(packed) if self._inner_unpack is not None else packed

    # -- iterations -----------------------------------------------------------------------
    def close_iteration(self, following: int) -> dict[str, int]:
        """End the iteration: fold its tallies into the peaks, and say what is held now, in
        bytes: ``saved`` by the iteration that ended, ``held`` in all, ``earlier``: held from
        iterations before it. ``following`` numbers the iteration that begins."""
        if self._total:
            for where, nbytes in self._by_line.items():
                if nbytes > self.peak_line[where]:
                    self.peak_line[where] = nbytes
            for module, nbytes in self._by_module.items():
                if nbytes > self.peak_module[module]:
                    self.peak_module[module] = nbytes
            self.peak_total = max(self.peak_total, self._total)
        saved = self._total
        self._seen = set()
        self._by_line = Counter()
        self._by_module = Counter()
        self._total = 0
        held = self.held()
        self.iteration = following
        return {"saved": saved, **held}

    def held(self) -> dict[str, int]:
        """Bytes of saved tensors still alive: all, and those from earlier iterations."""
        self._sweep()
        storages: dict[int, int] = {}
        earlier: dict[int, int] = {}
        for ref in self._held:
            held = ref()
            if held is None:
                continue
            key = held.key or id(held)
            storages[key] = held.nbytes
            if held.iteration < self.iteration:
                earlier[key] = held.nbytes
        return {"held": sum(storages.values()), "earlier": sum(earlier.values())}

    def live_by(self) -> tuple[Counter, Counter]:
        """Saved bytes alive now, by user line and by module (for an out-of-memory report)."""
        by_line: Counter = Counter()
        by_module: Counter = Counter()
        seen: set[int] = set()
        for ref in self._held:
            held = ref()
            if held is None:
                continue
            key = held.key or id(held)
            if key in seen:
                continue
            seen.add(key)
            if held.site is not None:
                by_line[(held.site.path, held.site.line)] += held.nbytes
                self.sites.setdefault((held.site.path, held.site.line), held.site)
            if held.module is not None:
                by_module[held.module] += held.nbytes
        return by_line, by_module

    def _sweep(self) -> None:
        self._held = [ref for ref in self._held if ref() is not None]
