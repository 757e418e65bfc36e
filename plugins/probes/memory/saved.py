"""Bytes autograd saves for backward, by user line, by module and by iteration.

Every tensor autograd saves goes through ``saved_tensors_hooks``. Only the innermost pair of
hooks sees it, so this pair wraps whatever pair was innermost when it was installed (the
autograd probe's) and hands every tensor on to it: both probes see every saved tensor.

A holder lives exactly as long as autograd keeps the saved tensor: backward frees it, a
graph kept alive keeps it. So the bytes alive are counted as holders come and go (each
storage once, however many ops saved it), which gives the high-water mark of each
iteration, and what is still held after it, and from which iteration. Parameters saved for
backward are not counted: they live anyway. Holders are made only while the probe watches; between watched loops the hooks are taken off
(when they are the innermost pair, so that nothing else's nesting changes), and a saved
tensor costs nothing more than it does without this probe.
"""

from __future__ import annotations

import weakref
from collections import Counter
from typing import Any, Callable

import torch

from torchlint.probe import Site, storages

_is_compiling = torch.compiler.is_compiling
_top_hooks = torch._C._autograd._top_saved_tensors_default_hooks
_push_hooks = torch._C._autograd._push_saved_tensors_default_hooks
_pop_hooks = torch._C._autograd._pop_saved_tensors_default_hooks
_NO_FUNCTION = torch._C.DisableTorchFunction

#: Dead holders are swept from the registry at each iteration boundary, or once it holds this
#: many, or twice as many as the last sweep kept (see `_sweep`).
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


class _Ref(weakref.ref):
    """A weak reference to a holder that remembers its storage when the holder is gone."""

    __slots__ = ("key",)


def _parameter(tensor: torch.Tensor) -> bool:
    """A leaf that requires grad (a parameter), or a view of one (`weight.t()` in `linear`):
    it lives whether autograd keeps it or not."""
    if tensor.requires_grad and tensor.is_leaf:
        return True
    base = tensor._base
    return base is not None and base.requires_grad and base.is_leaf


class SavedAccounting:
    """Installs the hooks; counts live bytes; tallies per forward pass and per iteration."""

    def __init__(self, site: Callable[[], Site | None], module: Callable[[], str | None],
                 guard: Callable[..., Callable] | None = None) -> None:
        """``guard``: the probe's ``guarded``; a pack hook that raises then hands every tensor
        on to the pair below, untouched."""
        self._site = site
        self._module = module
        self._packer = guard(self._pack, fallback=self._pass_on) if guard is not None else self._pack
        self.watching = False
        self.iteration = 0
        self._inner_pack: Callable | None = None
        self._inner_unpack: Callable | None = None
        self._installed = False
        # Reading `self._released` makes a new bound method each time: made once, not once per
        # holder (each would live until backward, one more object per saved tensor for the
        # garbage collector's full passes to traverse).
        self._on_release = self._released
        self._held: list[_Ref] = []
        self._sweep_at = SWEEP_EVERY
        #: Storages saved and alive: key -> [bytes, holders].
        self._live: dict[int, list[int]] = {}
        self.live_bytes = 0
        self._peak_iteration = 0  # the most alive at once in this iteration
        # This forward pass: bytes saved by line and by module.
        self._by_line: Counter = Counter()
        self._by_module: Counter = Counter()
        #: The most one watched forward pass saved, per line / module; the most alive at once.
        self.peak_line: Counter = Counter()
        self.peak_module: Counter = Counter()
        self.peak_total = 0
        self.sites: dict[tuple[str, int], Site] = {}

    def install(self) -> None:
        top = _top_hooks(True)
        if top is not None:
            self._inner_pack, self._inner_unpack = top
        _push_hooks(self._packer, self._unpack)
        self._installed = True
        self.watching = True

    def uninstall(self) -> None:
        # Off the stack when innermost; under hooks the program left on, they stay (taking
        # the top pair off would take the program's).
        self.watch(False)

    def watch(self, on: bool) -> None:
        """Start or stop watching; the hooks come off while not watching, and go back on
        only over the pair they were installed over (never inside the program's own
        ``saved_tensors_hooks`` context, whose exit would then take ours off)."""
        self.watching = on
        if on and not self._installed:
            below = (self._inner_pack, self._inner_unpack) if self._inner_pack is not None else None
            if _top_hooks(True) == below:
                _push_hooks(self._packer, self._unpack)
                self._installed = True
            else:
                self.watching = False
        elif not on and self._installed and _top_hooks(True) == (self._packer, self._unpack):
            _pop_hooks()
            self._installed = False

    # -- the hooks ------------------------------------------------------------------------
    def _pack(self, tensor: torch.Tensor) -> Any:
        inner = self._inner_pack(tensor) if self._inner_pack is not None else tensor
        # Compiling first: Dynamo traces this hook, and must not guard on `watching`.
        if _is_compiling() or not self.watching or _parameter(tensor):
            return inner
        with _NO_FUNCTION():
            held_storages = storages(tensor)  # a sparse tensor's are its indices' and values'
        nbytes = sum(size for _, size in held_storages)
        pointer = held_storages[0][0] if held_storages else 0
        site = self._site()
        module = self._module()
        held = _Held(inner, nbytes, pointer, site, module, self.iteration)
        ref = _Ref(held, self._on_release)
        # A storage without memory (meta tensors) is never the same storage twice.
        ref.key = key = pointer or id(held)
        self._held.append(ref)
        if len(self._held) >= self._sweep_at:
            self._sweep()
        entry = self._live.get(key)
        if entry is not None:
            entry[1] += 1
            return held
        self._live[key] = [nbytes, 1]
        self.live_bytes += nbytes
        if self.live_bytes > self._peak_iteration:
            self._peak_iteration = self.live_bytes
        if site is not None:
            where = (site.path, site.line)
            self._by_line[where] += nbytes
            self.sites.setdefault(where, site)
        if module is not None:
            self._by_module[module] += nbytes
        return held

    def _pass_on(self, tensor: torch.Tensor) -> Any:
        return self._inner_pack(tensor) if self._inner_pack is not None else tensor

    def _unpack(self, packed: Any) -> torch.Tensor:
        if type(packed) is _Held:
            packed = packed.inner
        return self._inner_unpack(packed) if self._inner_unpack is not None else packed

    def _released(self, ref: _Ref) -> None:
        """A holder died: autograd let go of the tensor (backward ran, the graph was freed)."""
        entry = self._live.get(ref.key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del self._live[ref.key]
            self.live_bytes -= entry[0]

    # -- forward passes and iterations ----------------------------------------------------
    def forward_pass(self) -> None:
        """A call of the model begins: fold the last one's tallies into the peaks."""
        for where, nbytes in self._by_line.items():
            if nbytes > self.peak_line[where]:
                self.peak_line[where] = nbytes
        for module, nbytes in self._by_module.items():
            if nbytes > self.peak_module[module]:
                self.peak_module[module] = nbytes
        self._by_line = Counter()
        self._by_module = Counter()

    def close_iteration(self, following: int) -> dict[str, int]:
        """End the iteration, and say in bytes: ``peak``, the most saved for backward alive at
        once during it; ``held``, what is alive now; ``earlier``, what is alive from the
        iterations before it. ``following`` numbers the iteration that begins."""
        self.forward_pass()
        peak = self._peak_iteration
        self.peak_total = max(self.peak_total, peak)
        self._peak_iteration = self.live_bytes
        held = self.held()
        self.iteration = following
        return {"peak": peak, **held}

    def held(self) -> dict[str, int]:
        """Bytes of saved tensors still alive: all, and those from earlier iterations."""
        self._sweep()
        earlier: dict[int, int] = {}
        for ref in self._held:
            held = ref()
            if held is not None and held.iteration < self.iteration:
                earlier[ref.key] = held.nbytes
        return {"held": self.live_bytes, "earlier": sum(earlier.values())}

    def live_by(self) -> tuple[Counter, Counter]:
        """Saved bytes alive now, by user line and by module (for an out-of-memory report)."""
        by_line: Counter = Counter()
        by_module: Counter = Counter()
        seen: set[int] = set()
        for ref in self._held:
            held = ref()
            if held is None or ref.key in seen:
                continue
            seen.add(ref.key)
            if held.site is not None:
                by_line[(held.site.path, held.site.line)] += held.nbytes
                self.sites.setdefault((held.site.path, held.site.line), held.site)
            if held.module is not None:
                by_module[held.module] += held.nbytes
        return by_line, by_module

    def _sweep(self) -> None:
        self._held = [ref for ref in self._held if ref() is not None]
        # Inside one long forward (an RNN cell called for each of 1000 time steps) no holder
        # has died yet: a sweep every SWEEP_EVERY holders read the whole forward's again each
        # time, quadratic in what one forward saves. The next sweep waits until the list has
        # doubled, so each sweep reads no more than the holders added since the last one.
        self._sweep_at = max(SWEEP_EVERY, 2 * len(self._held))
