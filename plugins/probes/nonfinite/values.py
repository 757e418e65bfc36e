"""What the non-finite probe says about values: finiteness, ranges, and where NaN/Inf came from.

An *origin* answers "where did the NaN/Inf in this tensor come from?":

* ``Culprit``: an operation that turned finite inputs into NaN/Inf (what TL735 reports);
* ``Deliberate``: a non-finite value the program wrote on purpose: a `-inf` literal
  (`masked_fill(mask, float("-inf"))`, `torch.full(..., -inf)`, `torch.tensor(inf)`), a
  `torch.finfo(dtype).min` sentinel that overflowed when added to, a `log` of a 0/1 mask;
* ``Outside``: the values were already non-finite where the probe started to look (a
  parameter, the data, a tensor made before the step).

Every helper here runs torch ops of its own: callers wrap them in
``torch._C.DisableTorchFunction()`` so that no mode (the probe dispatcher, fake-cuda's sync
log) sees them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Union

import torch

from torchlint.probe import Site

Tensor = torch.Tensor


@dataclass
class Culprit:
    op: str
    site: Site | None
    #: One phrase per input, e.g. "its input (512 values in [0, 0.998]) held 12 exact zeros".
    inputs: list[str]
    #: "-inf at 12 of 512 values".
    output: str
    #: Order among the operations of one look (the earliest culprit wins).
    order: int = 0
    #: The static rule whose bug this is, when the op says (log -> TL107, exp -> TL509).
    kind: str = ""
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Deliberate:
    why: str


@dataclass
class Outside:
    what: str


Origin = Union[Culprit, Deliberate, Outside, None]


# -- versions -------------------------------------------------------------------------------
class _Untracked:
    """The version of an inference tensor (made under `torch.inference_mode()`), which has no
    version counter: reading `_version` raises. Equal to nothing, itself included, so that
    such a tensor always counts as possibly changed since it was recorded."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return "UNTRACKED"


UNTRACKED: Any = _Untracked()


def version_of(tensor: Tensor) -> Any:
    """`tensor._version`, or UNTRACKED for an inference tensor."""
    return UNTRACKED if tensor.is_inference() else tensor._version


def grad_fn_of(tensor: Tensor) -> Any:
    """`tensor.grad_fn`, or None where torch refuses to say: a view made under `no_grad` whose
    base was edited in place since raises on `grad_fn` and `is_leaf` (`nn.init.orthogonal_`
    writes a parameter through such a view, and the view stays in the probe's records)."""
    try:
        return tensor.grad_fn
    except RuntimeError:
        return None


def is_grad_leaf(tensor: Tensor) -> bool:
    """A leaf that requires grad (a parameter, an input with `requires_grad=True`); False for
    a view torch refuses to place in the graph (see `grad_fn_of`)."""
    try:
        return tensor.requires_grad and tensor.is_leaf
    except RuntimeError:
        return False


# -- looking at values ----------------------------------------------------------------------
def is_float(value: Any) -> bool:
    return isinstance(value, Tensor) and value.is_floating_point() and not value.is_meta


def all_finite(tensor: Tensor) -> bool:
    """True for tensors without NaN/Inf; integer, bool and empty tensors are finite."""
    if not tensor.is_floating_point() and not tensor.is_complex():
        return True
    if tensor.numel() == 0 or tensor.is_meta:
        return True
    return bool(torch.isfinite(tensor.detach()).all())


def finite_flags(tensors: list[Tensor]) -> list[bool]:
    """`all_finite` of each: on a GPU with one host read for all of them.

    A sum is NaN or ±inf as soon as one element is, and it is the cheapest reduction there is
    (on a CPU, `isfinite(t).all()` costs ten times as much); a finite tensor whose sum
    overflows is then told apart by the exact check, which only non-finite sums pay for."""
    flags = [True] * len(tensors)
    groups: dict[Any, list[int]] = {}
    for index, tensor in enumerate(tensors):
        if tensor.is_floating_point() and tensor.numel() and not (tensor.is_meta or tensor.is_sparse):
            groups.setdefault(tensor.device, []).append(index)
    for device, indices in groups.items():
        parts = [tensors[i].detach() for i in indices]
        if device.type == "cpu":
            # No device to wait for: reading each sum is cheaper than stacking them.
            sums = [float(part.sum(dtype=torch.float32 if part.element_size() < 4 else None)) for part in parts]
            finite = [math.isfinite(value) for value in sums]
        else:
            norms = torch._foreach_norm(parts)  # one fused kernel; an overflow is re-checked below
            finite = torch.isfinite(torch.stack([n.float() for n in norms])).tolist()
        for index, ok in zip(indices, finite):
            flags[index] = bool(ok) or all_finite(tensors[index])
    return flags


def non_finite_scalar(values: Iterable[Any]) -> bool:
    """A Python number argument that is NaN or ±inf (`float("-inf")` given to masked_fill)."""
    for value in values:
        if isinstance(value, float) and not math.isfinite(value):
            return True
        if isinstance(value, (list, tuple)) and non_finite_scalar(value):
            return True
    return False


def huge_scalar(values: Iterable[Any], dtype: torch.dtype) -> bool:
    """A Python number at or beyond the edge of `dtype`'s range: `torch.finfo(dtype).min`, or
    `-1e9` written into a float16 tensor, as a mask value (it becomes -inf on purpose)."""
    if not dtype.is_floating_point:
        return False
    limit = torch.finfo(dtype).max
    return any(isinstance(v, (float, int)) and not isinstance(v, bool) and abs(v) >= limit for v in values)


def holds_sentinel(tensors: Iterable[Tensor]) -> bool:
    """An input holding its dtype's largest magnitude (`torch.finfo(dtype).min`): a mask value
    written on purpose, which any addition may round to -inf."""
    for tensor in tensors:
        if is_float(tensor) and tensor.numel():
            if float(tensor.detach().abs().max()) >= torch.finfo(tensor.dtype).max:
                return True
    return False


def is_mask(tensor: Tensor) -> bool:
    """Only 0s and 1s: `log(mask)` is the additive 0/-inf form of a boolean mask."""
    values = tensor.detach()
    return bool(((values == 0) | (values == 1)).all())


def describe_output(tensors: Iterable[Tensor]) -> str:
    parts = []
    total = 0
    for tensor in tensors:
        if not is_float(tensor):
            continue
        values = tensor.detach()
        total += values.numel()
        for label, count in (("NaN", torch.isnan(values).sum()), ("+inf", torch.isposinf(values).sum()),
                             ("-inf", torch.isneginf(values).sum())):
            count = int(count)
            if count:
                parts.append((label, count))
    if not parts:
        return "non-finite values"
    return " and ".join(f"{label} at {count} of {total} values" for label, count in parts)


def _number(value: float) -> str:
    return f"{value:.4g}"


def describe_input(tensor: Tensor, label: str) -> str:
    """`label` (512 values in [0, 0.998]; 12 exactly 0, 3 negative)."""
    values = tensor.detach()
    if values.numel() == 0:
        return f"{label} (empty)"
    if not values.is_floating_point():
        values = values.double()
    low, high = (float(v) for v in torch.aminmax(values.float() if values.dtype in (torch.float16, torch.bfloat16) else values))
    notes = []
    zeros = int((values == 0).sum())
    negatives = int((values < 0).sum())
    if zeros:
        notes.append(f"{zeros} exactly 0")
    if negatives:
        notes.append(f"{negatives} negative")
    count = values.numel()
    shape = "1 value" if count == 1 else f"{count} values"
    where = f"{_number(low)}" if count == 1 else f"[{_number(low)}, {_number(high)}]"
    dtype = "" if tensor.dtype == torch.float32 else f" {str(tensor.dtype).replace('torch.', '')}"
    text = f"{label} ({shape}{dtype} {'=' if count == 1 else 'in'} {where}"
    return text + (f"; {', '.join(notes)})" if notes else ")")


# -- what the operation does wrong ----------------------------------------------------------
LOGS = {"log", "log2", "log10", "xlogy", "special_xlogy"}
DIVISIONS = {"div", "true_divide", "truediv", "rtruediv", "rdiv", "divide", "floor_divide", "reciprocal", "rsqrt",
             "remainder", "fmod"}
ROOTS = {"sqrt"}
EXPONENTIALS = {"exp", "exp2", "expm1", "sinh", "cosh", "special_exp2", "special_expm1"}
POWERS = {"pow", "float_power", "rpow"}
INVERSE_TRIG = {"acos", "asin", "atanh", "arccos", "arcsin", "arctanh", "acosh", "arccosh"}


def op_label(name: str) -> str:
    """`aten._log_softmax` -> `log_softmax`, `__truediv__` -> `truediv`."""
    return name.strip("_")


def kind_of(op: str) -> str:
    if op in LOGS or op == "log1p":
        return "TL107"
    if op in EXPONENTIALS:
        return "TL509"
    return ""


def hint(op: str, inputs: list[Tensor], output_dtype: torch.dtype | None) -> str:
    """Why this op gave NaN/Inf from these finite inputs, in a few words."""
    first = inputs[0] if inputs else None
    if op in LOGS and first is not None:
        return "log of 0 is -inf and log of a negative number is NaN"
    if op == "log1p":
        return "log1p(-1) is -inf and log1p of anything below -1 is NaN"
    if op in DIVISIONS:
        return "a division by 0 is ±inf (0/0 is NaN)"
    if op in ROOTS:
        return "the square root of a negative number is NaN"
    if op == "rsqrt":
        return "rsqrt(0) is inf and rsqrt of a negative number is NaN"
    if op in POWERS:
        return "a negative base to a fractional power is NaN, 0 to a negative power is inf, and large powers overflow"
    if op in INVERSE_TRIG:
        return "the input is outside the function's domain"
    dtype = output_dtype if output_dtype is not None and output_dtype.is_floating_point else None
    if op in EXPONENTIALS and dtype is not None:
        return f"exp overflows {str(dtype).replace('torch.', '')} above {math.log(torch.finfo(dtype).max):.4g}"
    if dtype is not None:
        return f"the result overflows {str(dtype).replace('torch.', '')} (largest finite value {torch.finfo(dtype).max:.4g})"
    return ""


def input_labels(op: str, count: int) -> list[str]:
    """Names for an op's tensor inputs, so that the message says which one was 0."""
    if op in ("rtruediv", "rdiv") and count >= 1:
        return ["the divisor"] + [f"input {i + 1}" for i in range(1, count)]
    if op in DIVISIONS - {"reciprocal", "rsqrt"} and count == 2:
        return ["the dividend", "the divisor"]
    if op in POWERS and count == 2:
        return ["the base", "the exponent"]
    if count == 1:
        return ["its input"]
    return [f"input {i + 1}" for i in range(count)]


def judge(op: str, inputs: list[Tensor], scalars: list[Any], outputs: list[Tensor], site: Site | None,
          order: int = 0) -> Origin:
    """The origin of NaN/Inf in `outputs` of `op`, whose tensor `inputs` were all finite."""
    if non_finite_scalar(scalars):
        return Deliberate("a non-finite number written on purpose (`float('-inf')`, `float('nan')`)")
    dtype = next((t.dtype for t in outputs if is_float(t)), None)
    if (dtype is not None and huge_scalar(scalars, dtype)) or holds_sentinel(inputs):
        return Deliberate("a `torch.finfo(dtype).min`/`max` sentinel")
    shown = [t for t in inputs if isinstance(t, Tensor) and t.dtype != torch.bool]
    if op in LOGS and shown and is_float(shown[0]) and not shown[0].requires_grad and is_mask(shown[0]):
        return Deliberate("the log of a 0/1 mask (the additive -inf form of a mask)")
    if not shown:
        return Outside("a tensor made from data or uninitialised memory (`torch.tensor(...)`, `torch.empty`)")
    labels = input_labels(op, len(shown))
    return Culprit(
        op=op,
        site=site,
        inputs=[describe_input(t, label) for t, label in zip(shown, labels)],
        output=describe_output(outputs),
        order=order,
        kind=kind_of(op),
        data={"hint": hint(op, shown, dtype)},
    )


def node_op(name: str) -> str:
    """The forward op of an autograd node: `LinalgVectorNormBackward0` -> `linalg_vector_norm`."""
    stem = re.sub(r"Backward\d*$", "", name)
    return re.sub(r"(?<!^)(?=[A-Z])", "_", stem).lower()
