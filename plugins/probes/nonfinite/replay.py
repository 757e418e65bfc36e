"""Running one recorded top-level module call again, watching every operation inside it.

The watch phase only knows that a model's output (or a loss it returned) held NaN/Inf. The
same call is then run once more with the inputs, parameters and random-number state it had,
under a ``TorchDispatchMode`` that checks every aten operation's output, to name the first
operation that turned finite inputs into NaN/Inf and the user line that called it
(``find_forward``); or with autograd's anomaly metadata and a hook on every node of the
replayed graph, to name the first node whose gradient turned non-finite and the forward line
that made it (``find_backward``).

The replay must change nothing the program can see: it runs with every module hook switched
off (the program's, torch's `--steps` counter's and the other probes'), hidden from the probe
dispatcher, the autograd probe's saved-tensor hooks and fake-cuda's sync log, with the random-number generators set back to where
the call started and restored after, with the buffers (BatchNorm's running statistics) put
back as they were, and it computes gradients with `torch.autograd.grad`, which leaves every
`.grad` alone. It runs `module.forward` itself (the program's own forward pre-hooks already
ran on the recorded arguments).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections import OrderedDict
from typing import Any, Iterator

import torch
from torch.nn.modules import module as module_hooks
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map

from torchlint.probe import LIBRARY, USER, Site

from .values import Culprit, Deliberate, Origin, Outside, describe_input, describe_output, is_float, judge, node_op, version_of
from .window import Record

Tensor = torch.Tensor

_GLOBAL_HOOKS = (
    "_global_forward_pre_hooks", "_global_forward_hooks", "_global_forward_hooks_always_called",
    "_global_forward_hooks_with_kwargs", "_global_backward_pre_hooks", "_global_backward_hooks",
)
_MODULE_HOOKS = (
    "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks", "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called", "_backward_pre_hooks", "_backward_hooks",
)
_FINITE = object()


def unwrap(module: torch.nn.Module) -> torch.nn.Module:
    """The module whose eager `forward` computes the values: through `torch.compile`'s
    wrapper (whose kernels no dispatch mode can look into) and DDP/DataParallel."""
    for _ in range(4):
        inner = getattr(module, "_orig_mod", None)
        if inner is None and type(module).__name__ in ("DistributedDataParallel", "DataParallel"):
            inner = getattr(module, "module", None)
        if not isinstance(inner, torch.nn.Module):
            return module
        module = inner
    return module


# -- out of sight ---------------------------------------------------------------------------
@contextlib.contextmanager
def out_of_sight(ctx: Any) -> Iterator[None]:
    """Take the probe dispatcher off the torch-function mode stack (other modes, a device
    mode's included, stay) and pause fake-cuda's sync log: the replay is not the program's."""
    from torchlint.probe import ProbeDispatch

    count = torch._C._len_torch_function_stack()
    modes = [torch._C._get_function_stack_at(i) for i in range(count)]
    position = next((i for i, mode in enumerate(modes) if isinstance(mode, ProbeDispatch)), None)
    popped: list[Any] = []
    if position is not None:
        while len(popped) < count - position:
            popped.append(torch._C._pop_torch_function_stack())
        for mode in reversed(popped[:-1]):  # those above the dispatcher go back on
            torch._C._push_on_torch_function_stack(mode)
    syncs = getattr(ctx.device, "syncs", None)
    if syncs is not None:
        syncs.paused += 1
    try:
        # Saved tensors go through these hooks rather than the autograd probe's: the replay's
        # graph is not one the program's in-place edits can break.
        with torch.autograd.graph.saved_tensors_hooks(_keep, _keep):
            yield
    finally:
        if syncs is not None:
            syncs.paused -= 1
        if position is not None:
            for _ in popped[:-1]:
                torch._C._pop_torch_function_stack()
            for mode in reversed(popped):
                torch._C._push_on_torch_function_stack(mode)


def _keep(tensor: Tensor) -> Tensor:
    return tensor


@contextlib.contextmanager
def without_hooks(module: torch.nn.Module) -> Iterator[None]:
    saved_globals = {name: getattr(module_hooks, name) for name in _GLOBAL_HOOKS if hasattr(module_hooks, name)}
    saved_modules = [(m, {name: m.__dict__[name] for name in _MODULE_HOOKS if name in m.__dict__}) for m in module.modules()]
    try:
        for name, value in saved_globals.items():
            setattr(module_hooks, name, type(value)())
        for m, hooks in saved_modules:
            for name, value in hooks.items():
                m.__dict__[name] = type(value)() if isinstance(value, (dict, OrderedDict, set)) else value
        yield
    finally:
        for name, value in saved_globals.items():
            setattr(module_hooks, name, value)
        for m, hooks in saved_modules:
            m.__dict__.update(hooks)


@contextlib.contextmanager
def as_it_ran(record: Record, module: torch.nn.Module) -> Iterator[None]:
    """The random-number state and autocast regions the call started with; its buffers
    restored afterwards (a replay in training mode updates BatchNorm statistics again)."""
    call = record.call
    assert call is not None
    buffers = [(b, b.detach().clone()) for b in module.buffers()]
    cpu_now = torch.get_rng_state()
    cuda_now = torch.cuda.get_rng_state() if call.cuda_rng is not None else None
    with contextlib.ExitStack() as stack:
        for device_type, dtype in call.autocast:
            stack.enter_context(torch.autocast(device_type, dtype=dtype))
        torch.set_rng_state(call.rng)
        if call.cuda_rng is not None:
            torch.cuda.set_rng_state(call.cuda_rng)
        try:
            yield
        finally:
            torch.set_rng_state(cpu_now)
            if cuda_now is not None:
                torch.cuda.set_rng_state(cuda_now)
            with torch.no_grad():
                for buffer, value in buffers:
                    if buffer.shape == value.shape:
                        buffer.copy_(value)


def replayable(record: Record) -> bool:
    """The call's tensor arguments still hold the values it was given."""
    call = record.call
    return call is not None and all(version_of(tensor) == version for tensor, version in call.versions)


# -- where, inside the replay ---------------------------------------------------------------
class Sites:
    """The user line running an operation inside the replayed call: the innermost user frame
    below the replay's own frame; else a library's (a torchvision model); else the line that
    called the module."""

    def __init__(self, ctx: Any, fallback: Site | None) -> None:
        self.frames = ctx.frames
        self.fallback = fallback
        self.entry: Any = None

    def here(self) -> Site | None:
        frame = sys._getframe(1)
        library = None
        while frame is not None and frame is not self.entry:
            verdict = self.frames.verdict(frame.f_code.co_filename)
            if verdict == USER:
                return Site(self.frames._absolute(frame.f_code.co_filename), frame.f_lineno, frame.f_code.co_name)
            if verdict == LIBRARY and library is None:
                library = frame
            frame = frame.f_back
        if library is not None:
            return Site(self.frames._absolute(library.f_code.co_filename), library.f_lineno, library.f_code.co_name)
        return self.fallback

    def of_traceback(self, lines: list[str]) -> Site | None:
        """The same choice made from autograd's anomaly traceback of a node (formatted frames)."""
        frames = []
        for entry in lines or ():
            match = _FRAME.search(entry)
            if match:
                frames.append((match["path"], int(match["line"]), match["name"]))
        here = os.path.realpath(__file__)
        start = max((i + 1 for i, (path, _, name) in enumerate(frames)
                     if name == "_forward" and os.path.realpath(path) == here), default=0)
        library = None
        for path, line, name in reversed(frames[start:]):
            verdict = self.frames.verdict(path)
            if verdict == USER:
                return Site(self.frames._absolute(path), line, name)
            if verdict == LIBRARY and library is None:
                library = Site(self.frames._absolute(path), line, name)
        return library or self.fallback


_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<name>\S+)')


# -- forward --------------------------------------------------------------------------------
class ForwardWatch(TorchDispatchMode):
    """Follows NaN/Inf through every aten operation: each non-finite tensor carries the
    origin of its non-finite values (the op that made them from finite inputs, a literal,
    or an input that already held them)."""

    def __init__(self, sites: Sites) -> None:
        super().__init__()
        self.sites = sites
        self.known: dict[int, tuple[Tensor, int, Any]] = {}
        self.count = 0

    def origin(self, tensor: Tensor) -> Any:
        entry = self.known.get(id(tensor))
        if entry is not None and entry[0] is tensor and entry[1] == version_of(tensor):
            return entry[2]
        finite = bool(torch.isfinite(tensor.detach()).all()) if tensor.numel() else True
        found = _FINITE if finite else Outside("a parameter, buffer or input of the module")
        self.known[id(tensor)] = (tensor, version_of(tensor), found)
        return found

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        leaves = tree_leaves((args, kwargs))
        with torch._C.DisableTorchFunction():
            inputs = [x for x in leaves if isinstance(x, Tensor)]
            before = [self.origin(x) for x in inputs if is_float(x)]
        result = func(*args, **kwargs)
        with torch._C.DisableTorchFunction():
            outputs = [x for x in tree_leaves(result) if isinstance(x, Tensor) and is_float(x)]
            for output in outputs:
                if output.numel() == 0 or bool(torch.isfinite(output.detach()).all()):
                    self.known[id(output)] = (output, version_of(output), _FINITE)
                    continue
                inherited = next((o for o in before if o is not _FINITE), None)
                if inherited is None:
                    self.count += 1
                    scalars = [x for x in leaves if isinstance(x, (int, float)) and not isinstance(x, bool)]
                    inherited = judge(_aten_name(func), inputs, scalars, [output], self.sites.here(), self.count)
                self.known[id(output)] = (output, version_of(output), inherited)
        return result

    def origin_of_outputs(self, result: Any) -> Origin:
        origins = [self.origin(x) for x in tree_leaves(result) if isinstance(x, Tensor) and is_float(x)]
        origins = [o for o in origins if o is not _FINITE and o is not None]
        culprits = sorted((o for o in origins if isinstance(o, Culprit)), key=lambda c: c.order)
        if culprits:
            return culprits[0]
        return next((o for o in origins if isinstance(o, Deliberate)), None) or next(iter(origins), None)


def _aten_name(func: Any) -> str:
    packet = getattr(func, "overloadpacket", None)
    name = getattr(packet, "__name__", None) or getattr(func, "__name__", "") or str(func)
    name = name.split(".")[-1].strip("_")
    return name[len("native_"):] if name.startswith("native_") else name  # native_layer_norm: layer_norm


def _forward(module: torch.nn.Module, args: tuple, kwargs: dict) -> Any:
    return module.forward(*args, **kwargs)


def _fresh(value: Any) -> Any:
    """A recorded argument cut from the program's graph, still requiring grad if it did."""
    if isinstance(value, Tensor):
        return value.detach().requires_grad_(value.requires_grad and is_float(value))
    return value


def find_forward(ctx: Any, record: Record) -> Origin:
    """Replay the call under the forward watch: where its outputs' NaN/Inf came from."""
    if not replayable(record):
        return None
    module = unwrap(record.call.module)
    sites = Sites(ctx, record.site)
    watch = ForwardWatch(sites)
    # With the call's own grad mode: whether a value derives from the weights tells a model's
    # probabilities from a mask.
    with out_of_sight(ctx), without_hooks(module), as_it_ran(record, module), torch.set_grad_enabled(record.call.grad_enabled):
        with torch._C.DisableTorchFunction():
            args, kwargs = tree_map(_fresh, (record.args, record.kwargs))
        sites.entry = sys._getframe()
        try:
            with watch:
                result = _forward(module, args, kwargs)
            with torch._C.DisableTorchFunction():
                return watch.origin_of_outputs(result)
        finally:
            sites.entry = None  # the frame holds `sites`: no cycle keeping the replay's graph alive


# -- backward -------------------------------------------------------------------------------
def find_backward(ctx: Any, record: Record) -> Culprit | None:
    """Replay the call with a graph, then backward from all-ones output gradients: the first
    node (in backward order) that made a non-finite gradient out of finite ones."""
    if not replayable(record):
        return None
    module = unwrap(record.call.module)
    sites = Sites(ctx, record.site)
    with out_of_sight(ctx), without_hooks(module):
        with as_it_ran(record, module), torch.enable_grad(), torch.autograd.set_detect_anomaly(True, check_nan=False):
            with torch._C.DisableTorchFunction():
                args, kwargs = tree_map(_fresh, (record.args, record.kwargs))
            result = _forward(module, args, kwargs)
        outputs = [x for x in tree_leaves(result) if isinstance(x, Tensor) and is_float(x) and x.grad_fn is not None]
        leaves = [p for p in module.parameters() if p.requires_grad]
        leaves += [x for x in tree_leaves((args, kwargs)) if isinstance(x, Tensor) and x.requires_grad]
        if not outputs or not leaves:
            return None
        return _first_bad_node(outputs, leaves, sites)


def _first_bad_node(outputs: list[Tensor], leaves: list[Tensor], sites: Sites) -> Culprit | None:
    found: list[Culprit] = []

    def check(node: Any) -> Any:
        def hook(grad_inputs: tuple, grad_outputs: tuple) -> None:
            if found:
                return
            with torch._C.DisableTorchFunction():
                incoming = [g for g in grad_outputs if isinstance(g, Tensor)]
                produced = [g for g in grad_inputs if isinstance(g, Tensor)]
                if not produced or not all(bool(torch.isfinite(g).all()) for g in incoming):
                    return
                if all(bool(torch.isfinite(g).all()) for g in produced):
                    return
                found.append(describe_node(node, produced, sites))

        return hook

    seen: set[int] = set()
    stack = [o.grad_fn for o in outputs]
    nodes = []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        node.register_hook(check(node))
        stack.extend(next_node for next_node, _ in node.next_functions)
    with torch._C.DisableTorchFunction(), torch.enable_grad():
        try:
            torch.autograd.grad(outputs, leaves, grad_outputs=[torch.ones_like(o) for o in outputs],
                                allow_unused=True, retain_graph=True)
        finally:
            del nodes
    return found[0] if found else None


def describe_node(node: Any, produced: list[Tensor], sites: Sites) -> Culprit:
    op = node_op(node.name())
    saved = []
    for attribute in sorted(dir(node)):
        if not attribute.startswith("_saved_"):
            continue
        try:
            value = getattr(node, attribute)
        except Exception:
            continue
        if isinstance(value, Tensor) and is_float(value):
            saved.append(describe_input(value, f"its saved `{attribute[len('_saved_'):]}`"))
    site = sites.of_traceback(node.metadata.get("traceback_") or [])
    return Culprit(op=op, site=site, inputs=saved, output=describe_output(produced))

