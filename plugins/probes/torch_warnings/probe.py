"""Warnings probe: the torch warnings that signal a bug become findings at the user's line.

torch says these once, in the middle of a training log, attributed to the line that called
it (or to a line of torch); each is a bug more often than not:

* TL713 ``softmax``/``log_softmax``/``softmin`` without ``dim``: torch picks dim 0 for 0-,
  1- and 3-d inputs, so a ``(batch, seq, classes)`` tensor is normalised over the batch (a
  1- or 2-d input, where torch picks the last dimension, is left alone: deprecated, not wrong);
* TL714 ``torch.tensor(t)`` of a tensor: a copy cut from the graph (no gradient flows back);
* TL715 ``.grad`` of a tensor that is not a leaf: always ``None`` after ``backward()``;
* TL716 a loss whose input and target sizes differ (``mse_loss``, ``l1_loss``, ...): they
  broadcast to a matrix of every input against every target;
* TL755 any other warning raised inside torch: its text, at the user line, once per line
  and warning.

The warnings reach the probe through ``Probe.warned`` with the user line
(``runtime.child.user_warnings``), even when the program filters warnings out.
"""

from __future__ import annotations

import os
import re
from types import FrameType

import torch

from torchlint.probe import Probe, TargetWarning

IMPLICIT_DIM = re.compile(r"Implicit dimension choice for (?P<op>\w+) has been deprecated")
COPY_CONSTRUCT = re.compile(r"To copy construct from a tensor, it is recommended to use sourceTensor\.(?:detach\(\)\.)?clone\(\)")
NON_LEAF_GRAD = re.compile(r"The \.grad attribute of a Tensor that is not a leaf Tensor is being accessed")
SIZE_MISMATCH = re.compile(r"Using a target size \(torch\.Size\((?P<target>\[[^\]]*\])\)\) that is different to the input size "
                           r"\(torch\.Size\((?P<input>\[[^\]]*\])\)\)")
#: Warnings about the machine, not the program: the device the program asked for is not there
#: (autocast and GradScaler for "cuda" disable themselves, `pin_memory` has nothing to pin
#: for), or it has fewer cores than the DataLoader has workers. A GPU program run under
#: `--device cpu` on a small machine says these on every run; on its own machine it does not.
#: And torch's note on its own default: `nn.TransformerEncoder` built with the default
#: `enable_nested_tensor=True` and a layer that cannot use nested tensors (`batch_first=False`,
#: pytorch/examples' word_language_model) warns that inference will not take that fast path.
NOT_THE_PROGRAM = re.compile("|".join((
    r"\b(?:CUDA|XPU|HPU|MPS)\b[^.]{0,40}\bis not available",
    r"no accelerator is found",
    r"suggested max number of worker in current system",
    r"enable_nested_tensor is True, but self\.use_nested_tensor is False",
)))
#: The losses that warn about sizes (torch/nn/functional.py), for naming the one that did.
SIZE_CHECKED_LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy", "soft_margin_loss",
                       "poisson_nll_loss", "gaussian_nll_loss", "kl_div")


class WarningsProbe(Probe):
    name = "warnings"
    order = 45
    summary = "torch warnings that signal a bug: implicit softmax dim, tensor copy-construction, non-leaf .grad, loss sizes"

    def warned(self, warning: TargetWarning) -> None:
        text = warning.message
        site = warning.site
        if site is None:
            return
        where = site.short()
        found = IMPLICIT_DIM.search(text)
        if found:
            op = found["op"]
            ndim = _softmax_input_dims(warning.frame)
            if ndim is not None and ndim <= 2:
                # torch chose the last dimension, as dim=-1 would: deprecated, not wrong
                self._torch_warning(warning, f"`{op}` without `dim` at {where}: deprecated; torch chose the last "
                                             f"dimension of this {ndim}-d input, as `dim=-1` would; pass it")
                return
            if ndim is None:
                chose = "torch chose the dimension (dim 0 for a 0-, 1- or 3-d input, dim 1 otherwise), so a (batch, seq, classes) " \
                        "tensor is normalised over the batch"
            elif ndim == 3:
                chose = "torch chose dim 0 for this 3-d input, so a (batch, seq, classes) tensor is normalised over the batch"
            else:
                chose = f"torch chose dim 1 for this {ndim}-d input: the channels of an (N, C, H, W) image, not the last dimension"
            self.ctx.evidence(self, code=None, runtime_code="TL713", at=site, data={"op": op, "ndim": ndim},
                              message=f"`{op}` without `dim` at {where}: {chose}; pass dim= (usually -1)")
            return
        if COPY_CONSTRUCT.search(text):
            self.ctx.evidence(self, code=None, runtime_code="TL714", at=site, data={},
                              message=f"`torch.tensor()` of a tensor at {where}: it copies the values and cuts the copy from "
                                      f"the graph, so no gradient flows back through it; use `t.clone()` to keep the gradient, "
                                      f"`t.detach().clone()` for a separate copy, or `torch.as_tensor(t)` to avoid the copy")
            return
        if NON_LEAF_GRAD.search(text):
            self.ctx.evidence(self, code=None, runtime_code="TL715", at=site, data={},
                              message=f"`.grad` of a tensor that is not a leaf at {where}: autograd does not keep it, so it is "
                                      f"None after backward(); read the leaf's `.grad` (a parameter, or the tensor created with "
                                      f"requires_grad=True), or call `.retain_grad()` on this one before backward()")
            return
        found = SIZE_MISMATCH.search(text)
        if found:
            loss = _calling_loss(warning.frame)
            shapes = _broadcast(found["input"], found["target"])
            what = f"`{loss}`" if loss else "a loss"
            into = f"; they broadcast to {shapes} and every input is compared with every target" if shapes else ""
            self.ctx.evidence(self, code=None, runtime_code="TL716", at=site,
                              data={"loss": loss, "input": found["input"], "target": found["target"], "broadcast": shapes},
                              message=f"{what} at {where} got input of size {found['input']} and target of size "
                                      f"{found['target']}{into}; reshape one to the other (e.g. `output.squeeze(-1)`)")
            return
        if _raised_in_torch(warning.frame) and not NOT_THE_PROGRAM.search(text):
            first = text.strip().splitlines()[0] if text.strip() else type(warning.category).__name__
            self._torch_warning(warning, f"torch warned at {where}: {warning.category.__name__}: {first}")

    def _torch_warning(self, warning: TargetWarning, message: str) -> None:
        """TL755 once per user line and warning text (the dispatch dedupes same-message evidence)."""
        self.ctx.evidence(self, code=None, runtime_code="TL755", at=warning.site, message=message,
                          data={"category": warning.category.__name__, "warning": warning.message.strip()[:500]})


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
#: torch's compiler: what it warns about while tracing (a builtin it cannot trace, hooks it
#: must call twice) is the compile probe's to explain (graph breaks, TL708), not a warning
#: about the program's own calls.
_COMPILER_DIRS = tuple(_TORCH_DIR + name + os.sep for name in ("_dynamo", "_inductor", "_functorch", "fx", "_export"))


#: Frames between the warning and the program's line that are looked at.
_STACK_LOOKED_AT = 80


def _raised_in_torch(frame: FrameType | None) -> bool:
    """Whether the warning was raised by torch's own code (not the program's, not a library's)
    for a call the program made: not while torch's compiler traces or generates code, and not
    while a module is being imported (a deprecated decorator torch applies to its own code when
    Inductor imports it is torch's to fix, not the program's)."""
    if frame is None:
        return False
    filename = os.path.abspath(frame.f_code.co_filename)
    if not filename.startswith(_TORCH_DIR):
        return False
    for _ in range(_STACK_LOOKED_AT):
        if frame is None:
            break
        name = frame.f_code.co_filename
        if name.startswith("<frozen importlib") or os.path.abspath(name).startswith(_COMPILER_DIRS):
            return False
        frame = frame.f_back
    return True


def _softmax_input_dims(frame: FrameType | None) -> int | None:
    """The input's number of dimensions, read from torch's `_get_softmax_dim(name, ndim, ...)`,
    the function that warns."""
    for _ in range(4):
        if frame is None:
            return None
        if frame.f_code.co_name == "_get_softmax_dim":
            ndim = frame.f_locals.get("ndim")
            return ndim if isinstance(ndim, int) else None
        frame = frame.f_back
    return None


def _calling_loss(frame: FrameType | None) -> str | None:
    """The torch.nn.functional loss on the stack where the warning was raised."""
    for _ in range(8):
        if frame is None:
            return None
        name = frame.f_code.co_name
        if name in SIZE_CHECKED_LOSSES and frame.f_code.co_filename.endswith("functional.py"):
            return name
        frame = frame.f_back
    return None


def _broadcast(input_size: str, target_size: str) -> str | None:
    import torch

    try:
        first = [int(n) for n in input_size.strip("[]").split(",") if n.strip()]
        second = [int(n) for n in target_size.strip("[]").split(",") if n.strip()]
        return str(list(torch.broadcast_shapes(tuple(first), tuple(second))))
    except (ValueError, RuntimeError):
        return None


PROBE = WarningsProbe
