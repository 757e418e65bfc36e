"""Compiled regions: the probes step aside while a callable ``torch.compile`` returned runs.

Dynamo traces the Python that runs under it: the ``__torch_function__`` of a mode on the
torch-function stack, the global module hooks ``Module._call_impl`` calls, the global
optimizer hooks ``Optimizer.step`` calls, the saved-tensor hooks AOTAutograd sees. Traced,
torchlint's probes broke the program's graphs (so Inductor compiled pieces, and an Inductor
bug went unseen), made Dynamo guard on probe state (recompilations) and raised Dynamo's
internal errors as the program's (``NameError: ___get_torch_function_mode_stack_at``).
Marking the probe code ``torch._dynamo.disable`` instead turns every torch call into a
graph break. So the callables ``torch.compile`` returns are wrapped: for the length of a
call, every part of torchlint Dynamo could see comes off (the probe dispatch off the mode
stack, torchlint's global hooks out of torch's hook tables, torchlint's saved-tensor hooks
off their stack) and goes back on, in its place, when the call returns. Dynamo then sees,
compiles and guards on exactly what it would without torchlint. The price: probes see
nothing inside a compiled call (not even its eager pieces around a graph break); the
compile probe replays the call instead (``listeners``).

The device mode stays: under ``--device fake-cuda`` the simulation's mode is what makes a
tensor CUDA, inside compiled code as outside. Dynamo runs it untraced (``fake_cuda``'s
``compile_skips_the_simulation``), a graph break at each torch call, so there Inductor
compiles little and a bug of its code generation can go unseen: check compiles on ``cpu``.

Child process only.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch
from torch.nn.modules import module as module_hooks
from torch.optim import optimizer as optimizer_hooks

from torchlint.runtime.frames import FrameClassifier, Site

#: torch's global hook tables Dynamo reads while tracing a module call or an optimizer step.
#: The flag tables first: a flag is taken with its hook, found in the hook table.
_HOOK_TABLES = (
    (module_hooks, "_global_forward_hooks_always_called"),
    (module_hooks, "_global_forward_hooks_with_kwargs"),
    (module_hooks, "_global_forward_pre_hooks"),
    (module_hooks, "_global_forward_hooks"),
    (module_hooks, "_global_backward_pre_hooks"),
    (module_hooks, "_global_backward_hooks"),
    (module_hooks, "_global_buffer_registration_hooks"),
    (module_hooks, "_global_module_registration_hooks"),
    (module_hooks, "_global_parameter_registration_hooks"),
    (optimizer_hooks, "_global_optimizer_pre_hooks"),
    (optimizer_hooks, "_global_optimizer_post_hooks"),
)
#: Tables keyed like a hook table whose values are flags, not callables: they follow the
#: hook of the same key (``register_module_forward_hook(always_call=True)``).
_FLAG_TABLES = {"_global_forward_hooks_always_called": "_global_forward_hooks",
                "_global_forward_hooks_with_kwargs": "_global_forward_hooks"}

_top_saved_hooks = torch._C._autograd._top_saved_tensors_default_hooks
_push_saved_hooks = torch._C._autograd._push_saved_tensors_default_hooks
_pop_saved_hooks = torch._C._autograd._pop_saved_tensors_default_hooks
_is_compiling = torch.compiler.is_compiling


@dataclass
class CompiledCall:
    """One call of a callable the program compiled, as the listeners see it (before it runs)."""

    compiled: Any  # what the program calls: torch.compile's function or OptimizedModule
    target: Any  # what was compiled: the function, or the module
    args: tuple
    kwargs: dict
    #: torch.compile's keyword arguments (backend, mode, dynamic, fullgraph, options).
    compiled_with: dict
    defined_at: Site | None  # the user line of torch.compile(...) (or of the decorator)
    first: bool  # the first call of this compiled callable
    _frames: Any = None
    _caller: Any = None  # the caller's frame, until the call returns
    _site: Site | None = None

    @property
    def called_at(self) -> Site | None:
        """The user line of this call: a stack walk, done only for a listener that asks."""
        if self._site is None and self._caller is not None:
            self._site = self._frames.user_site(self._caller)
        return self._site


@dataclass
class _Compiled:
    target: Any
    compiled_with: dict
    defined_at: Site | None
    calls: int = 0


class Ownership:
    """Whether a hook is torchlint's: its code lives in torchlint's folders or in a probe module."""

    def __init__(self, dirs: list[str], files: tuple[str, ...] = ()) -> None:
        self._dirs = tuple(os.path.join(os.path.realpath(d), "") for d in dirs)
        self._files = {os.path.realpath(f) for f in files}
        self._verdicts: dict[str, bool] = {}
        self._hooks: dict[Any, bool] = {}

    def add_file(self, path: str) -> None:
        self._files.add(os.path.realpath(path))
        self._verdicts.clear()
        self._hooks.clear()

    def __call__(self, hook: Any) -> bool:
        # Asked for every hook at every compiled call: the answer is kept per hook.
        try:
            return self._hooks[hook]
        except (KeyError, TypeError):
            pass
        verdict = self._owned(hook)
        try:
            self._hooks[hook] = verdict
        except TypeError:  # an unhashable callable: asked again next time
            pass
        return verdict

    def _owned(self, hook: Any) -> bool:
        code = _code_of(hook)
        if code is None:
            return False
        path = code.co_filename
        verdict = self._verdicts.get(path)
        if verdict is None:
            real = os.path.realpath(path)
            verdict = self._verdicts[path] = real.startswith(self._dirs) or real in self._files
        return verdict


def _code_of(hook: Any) -> Any:
    for _ in range(4):  # a bound method's function, a partial's function
        code = getattr(hook, "__code__", None)
        if code is not None:
            return code
        hook = getattr(hook, "__func__", None) or getattr(hook, "func", None)
        if hook is None:
            return None
    return None


class CompiledRegions:
    """Wraps what ``torch.compile`` returns; around each call, torchlint is out of Dynamo's sight."""

    def __init__(self, frames: FrameClassifier, owned: Ownership, hides_mode: Callable[[Any], bool]) -> None:
        self.frames = frames
        self.owned = owned
        self.hides_mode = hides_mode  # which torch-function modes come off (the probe dispatch)
        #: Called with a CompiledCall before each outermost call of a compiled callable, outside
        #: the region (probes are still on): the compile probe captures its target and inputs.
        self.listeners: list[Callable[[CompiledCall], None]] = []
        #: Called with the same CompiledCall once the call returned or raised, probes back on.
        self.after: list[Callable[[CompiledCall], None]] = []
        self._modules: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # OptimizedModule -> _Compiled
        self._depth = threading.local()
        self._restore: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._inside = 0  # threads in a compiled call now
        self._tables: list = []
        self.thread: int | None = None
        self._module_patched = False

    # -- patching torch.compile ---------------------------------------------------------------
    def install(self) -> None:
        self.thread = threading.get_ident()
        original_compile = torch.compile
        regions = self

        @functools.wraps(original_compile)
        def compile(*args: Any, **kwargs: Any) -> Any:
            regions._patch_optimized_module()
            result = original_compile(*args, **kwargs)
            model = args[0] if args else kwargs.get("model")
            if model is None or result is model:  # the decorator form (it calls us back), or disable=True
                return result
            return regions._wrap(result, model, kwargs, regions.frames.user_site(sys._getframe(1)))

        torch.compile = compile  # type: ignore[assignment]

        def restore() -> None:
            torch.compile = original_compile

        self._restore.append(restore)
        # Importing Dynamo costs a run ~0.8 s: only once the program compiles, or imported it.
        if "torch._dynamo.eval_frame" in sys.modules:
            self._patch_optimized_module()

    def _patch_optimized_module(self) -> None:
        """``torch.compile(module)`` returns an OptimizedModule: its calls are compiled regions."""
        if self._module_patched:
            return
        self._module_patched = True
        from torch._dynamo.eval_frame import OptimizedModule

        original_call = OptimizedModule.__call__
        regions = self

        def __call__(module: Any, *args: Any, **kwargs: Any) -> Any:
            if _is_compiling():  # inside another compiled region: Dynamo inlines the module
                return original_call(module, *args, **kwargs)
            known = regions._modules.get(module)
            if known is None:  # compiled with torch._dynamo.optimize, or before the run
                known = regions._modules[module] = _Compiled(getattr(module, "_orig_mod", module), {}, None)
            return regions._call(module, known, lambda: original_call(module, *args, **kwargs), args, kwargs)

        OptimizedModule.__call__ = __call__  # type: ignore[method-assign]

        def restore() -> None:
            OptimizedModule.__call__ = original_call  # type: ignore[method-assign]
            self._module_patched = False

        self._restore.append(restore)

    def uninstall(self) -> None:
        while self._restore:
            self._restore.pop()()

    def _wrap(self, compiled: Any, model: Any, compiled_with: dict, site: Site | None) -> Any:
        known = _Compiled(model, dict(compiled_with), site)
        from torch._dynamo.eval_frame import OptimizedModule

        if isinstance(compiled, OptimizedModule):  # its class's __call__ does the rest
            self._modules[compiled] = known
            return compiled
        if not callable(compiled):
            return compiled
        regions = self

        # functools.wraps copies `_torchdynamo_inline`: called from inside another compiled
        # region, Dynamo inlines the original function and never traces this one.
        @functools.wraps(compiled)
        def call_compiled(*args: Any, **kwargs: Any) -> Any:
            if _is_compiling():
                return compiled(*args, **kwargs)
            return regions._call(call_compiled, known, lambda: compiled(*args, **kwargs), args, kwargs)

        return call_compiled

    # -- one call -------------------------------------------------------------------------------
    def _call(self, compiled: Any, known: _Compiled, run: Callable[[], Any], args: tuple, kwargs: dict) -> Any:
        if getattr(self._depth, "value", 0):
            return run()  # an eager piece of a compiled call called another: already hidden
        call = None
        if (self.listeners or self.after) and threading.get_ident() == self.thread:
            known.calls += 1
            call = CompiledCall(compiled, known.target, args, kwargs, known.compiled_with, known.defined_at,
                                known.calls == 1, self.frames, sys._getframe(2))
            for listener in self.listeners:
                listener(call)
            call._caller = None  # no frame kept alive by a listener that keeps the call
        self._depth.value = 1
        try:
            with self.hidden():
                return run()
        finally:
            self._depth.value = 0
            if call is not None:
                for listener in self.after:
                    listener(call)

    @contextlib.contextmanager
    def hidden(self) -> Iterator[None]:
        """torchlint's modes, global hooks and saved-tensor hooks off; back in place after.
        Modes and saved-tensor hooks are per thread; the hook tables are the process's, off
        while any thread runs a compiled call."""
        modes = _take_modes(self.hides_mode)
        saved = _take_saved_hooks(self.owned)
        with self._lock:
            if not self._inside:
                self._tables = [_take_hooks(owner, name, self.owned) for owner, name in _HOOK_TABLES]
            self._inside += 1
        try:
            yield
        finally:
            with self._lock:
                self._inside -= 1
                if not self._inside:
                    for (owner, name), taken in zip(_HOOK_TABLES, self._tables):
                        _put_hooks(owner, name, taken)
                    self._tables = []
            _put_saved_hooks(saved)
            _put_modes(modes)


# -- the torch-function mode stack --------------------------------------------------------------

def _take_modes(hides: Callable[[Any], bool]) -> list[tuple[int, Any]]:
    """Pop the stack down to the lowest mode ``hides`` wants off; push the others back.
    Returns the (position, mode) of each one taken."""
    count = torch._C._len_torch_function_stack()
    if not count:
        return []
    stack = [torch._C._get_function_stack_at(i) for i in range(count)]
    positions = [i for i, mode in enumerate(stack) if hides(mode)]
    if not positions:
        return []
    for _ in range(count - positions[0]):
        torch._C._pop_torch_function_stack()
    for i in range(positions[0], count):
        if i not in positions:
            torch._C._push_on_torch_function_stack(stack[i])
    return [(i, stack[i]) for i in positions]


def _put_modes(taken: list[tuple[int, Any]]) -> None:
    if not taken:
        return
    count = torch._C._len_torch_function_stack()
    stack = [torch._C._pop_torch_function_stack() for _ in range(count)][::-1]
    for position, mode in taken:  # in increasing position: each lands where it was
        stack.insert(min(position, len(stack)), mode)
    for mode in stack:
        torch._C._push_on_torch_function_stack(mode)


# -- global hook tables ---------------------------------------------------------------------------

def _take_hooks(owner: Any, name: str, owned: Ownership) -> tuple[list, set] | None:
    table = getattr(owner, name, None)
    if not table:
        return None
    before = list(table.items())
    hooks_name = _FLAG_TABLES.get(name)
    if hooks_name is not None:  # a flag follows its hook out
        hooks = getattr(owner, hooks_name)
        mine = {key for key, _ in before if key in hooks and owned(hooks[key])}
    else:
        mine = {key for key, hook in before if owned(hook)}
    if not mine:
        return None
    if len(mine) == len(before):  # the usual case: the program has no global hook of its own
        table.clear()
    else:
        for key in mine:
            del table[key]
    return before, mine


def _put_hooks(owner: Any, name: str, taken: tuple[list, set] | None) -> None:
    """Ours back where they were; what the program added or removed meanwhile stays so."""
    if taken is None:
        return
    before, mine = taken
    table = getattr(owner, name)
    if not table and len(mine) == len(before):
        table.update(before)
        return
    now = dict(table)
    table.clear()
    for key, value in before:
        if key in mine:
            table[key] = value
        elif key in now:
            table[key] = now.pop(key)
    table.update(now)


# -- saved-tensor hooks ---------------------------------------------------------------------------

def _take_saved_hooks(owned: Ownership) -> list[tuple[Any, Any]]:
    """torchlint's pairs from the top of the stack (a pair the program pushed over them is the
    one in force: ours below it are not used, and stay)."""
    taken = []
    while True:
        top = _top_saved_hooks(True)
        if top is None or not owned(top[0]):
            return taken
        _pop_saved_hooks()
        taken.append(top)


def _put_saved_hooks(taken: list[tuple[Any, Any]]) -> None:
    for pack, unpack in reversed(taken):
        _push_saved_hooks(pack, unpack)
