"""Errors probe: when the program dies of a torch error that no static finding explains, say
what helps, at the user's line, in place of the bare crash (TL702).

* TL717 a shape error (``mat1 and mat2 shapes cannot be multiplied``, ``The size of tensor a
  must match``, ``shape '[...]' is invalid for input of size``, a convolution given the wrong
  number of channels, ...): torch names the op, not the layer. The probe names the module
  that failed by its path in the model (``Net.classifier.1``), what it is
  (``Linear(in_features=512, out_features=10, bias=True)``), and the shapes it was given.
* TL718 ``optimizer got an empty parameter list``: names the models in reach of the failing
  line that hold no parameters, and why: a misspelled ``__init__`` (``__int__``), or layers
  kept in a plain list or dict, which ``nn.Module`` does not register.

Both read the exception's own traceback when the program dies of it: the failing module
calls are the ``Module._call_impl`` frames on it, so nothing is hooked while the program runs.
"""

from __future__ import annotations

import difflib
import re
import traceback
from types import FrameType
from typing import Any

import torch
from torch import nn

from torchlint.probe import USER, Probe

#: torch's messages for operands whose shapes do not fit together.
SHAPE_ERRORS = re.compile(
    r"mat1 and mat2 shapes cannot be multiplied"
    r"|The size of tensor a \(\d+\) must match the size of tensor b"
    r"|shape '\[[^\]]*\]' is invalid for input of size"
    r"|Given groups=\d+, (?:weight|expected weight) of size"
    r"|Expected input batch_size \(\d+\) to match target batch_size"
    r"|Sizes of tensors must match except in dimension"
    r"|size mismatch"
    r"|input\.size\(-1\) must be equal to input_size"
    r"|Expected hidden(?:\[\d\])? size"
    r"|normalized_shape=.*but got input of size"
    r"|running_mean should contain \d+ elements not \d+"
    r"|Expected \d+D \(unbatched\) or \d+D \(batched\) input"
    r"|expected \d+D or \d+D input \(got \d+D input\)"
)
EMPTY_PARAMETERS = "optimizer got an empty parameter list"


class ErrorsProbe(Probe):
    name = "errors"
    order = 48
    summary = "known torch errors explained: the failing module and its input shapes; models without parameters"

    def raised(self, exc: BaseException) -> None:
        if not isinstance(exc, (RuntimeError, ValueError, TypeError)):
            return
        text = str(exc)
        if isinstance(exc, ValueError) and text.strip() == EMPTY_PARAMETERS:
            self._empty_parameters(exc)
        elif SHAPE_ERRORS.search(text):
            self._shape_error(exc, text)

    # -- TL717 --------------------------------------------------------------------------------
    def _shape_error(self, exc: BaseException, text: str) -> None:
        calls = _module_calls(exc)
        site = _user_site(self.ctx, exc)
        if not calls or site is None:
            return
        root, failing, args, kwargs = calls[0][0], *calls[-1]
        path = _module_path(root, failing)
        shapes = ", ".join(_shape(value) for value in (*args, *kwargs.values())) or "nothing"
        first_line = text.strip().splitlines()[0][:300]
        message = (f"{first_line} — in `{path}` ({_describe_module(failing)}), called with {shapes} at {site.short()}: "
                   f"the input does not have the shape this layer was built for")
        if self.ctx.evidence(self, code=None, runtime_code="TL717", at=site, message=message,
                             data={"module": path, "inputs": shapes, "error": first_line}):
            self.ctx.explain(exc, "TL717")

    # -- TL718 --------------------------------------------------------------------------------
    def _empty_parameters(self, exc: BaseException) -> None:
        site = _user_site(self.ctx, exc)
        frame = _user_frame(self.ctx, exc)
        if site is None or frame is None:
            return
        reasons = []
        for name, module in _modules_in_reach(frame):
            if any(True for _ in module.parameters()):
                continue
            reasons.append(f"`{name}` ({type(module).__name__}) has no parameters{_why_empty(module)}")
        if not reasons:
            return
        message = f"optimizer got an empty parameter list at {site.short()}: " + "; ".join(reasons)
        if self.ctx.evidence(self, code=None, runtime_code="TL718", at=site, message=message, data={"models": len(reasons)}):
            self.ctx.explain(exc, "TL718")


PROBE = ErrorsProbe


def _module_calls(exc: BaseException) -> list[tuple[nn.Module, tuple, dict]]:
    """The module calls the exception went through, outermost first: `Module._call_impl`
    frames and their `self`, `args`, `kwargs`."""
    calls = []
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_name != "_call_impl":
            continue
        module = frame.f_locals.get("self")
        if isinstance(module, nn.Module):
            args = frame.f_locals.get("args", ())
            kwargs = frame.f_locals.get("kwargs", {})
            calls.append((module, args if isinstance(args, tuple) else (), kwargs if isinstance(kwargs, dict) else {}))
    return calls


def _module_path(root: nn.Module, module: nn.Module) -> str:
    top = type(root).__name__
    if module is root:
        return top
    for name, candidate in root.named_modules():
        if candidate is module:
            return f"{top}.{name}"
    return type(module).__name__


def _describe_module(module: nn.Module) -> str:
    extra = module.extra_repr()
    if len(extra) > 80:
        extra = extra[:77] + "..."
    return f"{type(module).__name__}({extra})"


def _shape(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return f"a {type(value).__name__} of shapes {[tuple(v.shape) for v in value]}"
    return f"a {type(value).__name__}"


def _user_frame(ctx: Any, exc: BaseException) -> FrameType | None:
    """The innermost frame of the program's own code on the exception's way."""
    found = None
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        if ctx.frames.user_site(frame) is not None and ctx.frames.verdict(frame.f_code.co_filename) == USER:
            found = frame
    return found


def _user_site(ctx: Any, exc: BaseException):
    frame = _user_frame(ctx, exc)
    return ctx.frames.user_site(frame) if frame is not None else None


def _modules_in_reach(frame: FrameType) -> list[tuple[str, nn.Module]]:
    """Models named in the failing line's frame: its locals, then its module's globals."""
    seen: set[int] = set()
    found = []
    for namespace in (frame.f_locals, frame.f_globals):
        for name, value in list(namespace.items()):
            if isinstance(value, nn.Module) and id(value) not in seen:
                seen.add(id(value))
                found.append((name, value))
    return found


def _why_empty(module: nn.Module) -> str:
    """A misspelled `__init__`, or layers the module does not register."""
    for cls in type(module).__mro__:
        if cls is nn.Module or cls.__module__.startswith("torch."):
            break
        close = difflib.get_close_matches("__init__", [n for n in vars(cls) if n != "__init__"], n=1, cutoff=0.7)
        if close and callable(vars(cls)[close[0]]):
            return f": `{cls.__name__}` defines `{close[0]}`, not `__init__`, so its layers were never built"
    for attr, value in vars(module).items():
        items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
        if any(isinstance(item, nn.Module) for item in items):
            kind = "nn.ModuleDict" if isinstance(value, dict) else "nn.ModuleList"
            return f": its layers are in a plain {type(value).__name__} `self.{attr}`, which nn.Module does not register; use {kind}"
    return ""
