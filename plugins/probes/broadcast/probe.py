"""The broadcast probe (imports torch): TL739 and TL740, documented in the package.

TL739 in three steps, so that pairwise matrices built on purpose stay quiet:

1. An elementwise op or comparison whose two tensor operands hold the same number of values
   N, in shapes that differ only by size-1 dimensions (`[N]` and `[N, 1]`, `[N, 1]` and
   `[1, N]`), and whose result is larger than either: a suspect. Not a suspect when both
   operands are views of one tensor (`x[:, None] - x`), or when one got its size-1 dimension
   from an explicit `unsqueeze`/`[:, None]`/`view`/`reshape`/`expand` on the same line
   (`a.unsqueeze(1) * b`): the probe tags the outputs of those with their line.
2. The suspect's result is tagged, and the tag follows elementwise ops, casts and views.
3. A reduction (`sum`, `mean`, ...) or a loss that receives a tagged tensor reports it, at
   the line of the op in step 1. A matrix that is never reduced is never reported.

The probe costs one dictionary lookup per op it does not watch; for the binary ops it
watches, a shape comparison (equal shapes return at once).
"""

from __future__ import annotations

import warnings
import weakref
from typing import Any

import torch
import torch.nn.functional as F

from torchlint.probe import Probe, Site, op_name

Tensor = torch.Tensor


def _functions(owners: tuple, names: tuple[str, ...]) -> set:
    return {getattr(owner, name) for owner in owners for name in names if hasattr(owner, name)}


_ARITHMETIC = ("add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "remainder",
               "pow", "maximum", "minimum", "fmax", "fmin", "atan2", "hypot", "logical_and", "logical_or", "logical_xor",
               "bitwise_and", "bitwise_or", "bitwise_xor")
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "greater_equal", "less_equal", "not_equal")
_DUNDERS = ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
            "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__and__", "__rand__",
            "__or__", "__ror__", "__xor__", "__rxor__")
_COMPARISON_DUNDERS = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")

#: Binary elementwise ops: where an `[N]` meets an `[N, 1]`.
COMPARISONS = _functions((Tensor, torch), _COMPARISONS + _COMPARISON_DUNDERS)
BINARY = _functions((Tensor, torch), _ARITHMETIC + _DUNDERS) | COMPARISONS
#: Ops whose result carries their tagged input's values elementwise (a suspect's tag follows them).
PROPAGATE = BINARY | _functions(
    (Tensor, torch),
    ("abs", "__abs__", "neg", "__neg__", "__invert__", "square", "sqrt", "exp", "log", "log1p", "float", "double", "half",
     "bfloat16", "to", "type", "type_as", "long", "int", "bool", "sigmoid", "relu", "clamp", "clip", "clamp_min",
     "logical_not", "detach", "clone", "contiguous", "masked_fill", "where", "flatten", "view", "reshape", "squeeze",
     "permute", "transpose", "t", "cpu", "cuda"),
) | {F.relu, F.softplus, F.logsigmoid}
#: Ops that give a tensor a size-1 dimension on purpose; their outputs are tagged with the line.
SHAPERS = _functions(
    (Tensor, torch),
    ("unsqueeze", "__getitem__", "view", "view_as", "reshape", "reshape_as", "expand", "expand_as", "broadcast_to",
     "atleast_2d", "atleast_3d", "unflatten"),
)
EXPLICIT_BROADCASTS = _functions((Tensor, torch), ("expand", "expand_as", "broadcast_to"))
GETITEM = Tensor.__getitem__
REDUCTIONS = _functions((Tensor, torch), ("sum", "mean", "nansum", "nanmean", "count_nonzero", "norm", "std", "var")) | {
    torch.linalg.norm, torch.linalg.vector_norm,
}
LOSSES = {getattr(F, name) for name in dir(F) if name.endswith("_loss")} | {
    F.cross_entropy, F.binary_cross_entropy, F.binary_cross_entropy_with_logits, F.kl_div,
}
#: Losses of (input, target) that might broadcast without a word; which do is asked of the
#: installed torch at start-up (`_silent_broadcasters`): those that warn are TL716's.
BROADCAST_CANDIDATES = ("poisson_nll_loss", "kl_div", "gaussian_nll_loss", "hinge_embedding_loss",
                        "multilabel_soft_margin_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
                        "soft_margin_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits")
#: Probability-target checks per line of cross_entropy (each one reads values: a sync on a GPU).
VALUE_CHECKS = 3


class BroadcastProbe(Probe):
    name = "broadcast"
    runtime_code = "TL739"
    summary = "[N] against [N, 1] broadcast to [N, N] before a reduction; losses given a target that does not fit"

    def install(self) -> None:
        #: id -> (weakref, the line that gave it a size-1 dimension on purpose)
        self.shaped: dict[int, tuple[weakref.ref, tuple[str, int] | None]] = {}
        #: id -> (weakref, the suspect broadcast it carries)
        self.pending: dict[int, tuple[weakref.ref, dict]] = {}
        self.reported: set[tuple[str, int]] = set()
        self.value_checks: dict[tuple[str, int], int] = {}
        self.silent_losses = _silent_broadcasters()

    def watches(self, func: Any) -> bool:
        return func in PROPAGATE or func in SHAPERS or func in REDUCTIONS or func in LOSSES

    # -- reductions and losses ----------------------------------------------------------------
    def before(self, func: Any, args: tuple, kwargs: dict) -> None:
        reduction = func in REDUCTIONS
        if not reduction and func not in LOSSES:
            return
        if self.pending:
            inputs = args[:1] if reduction else (*args[:2], kwargs.get("input"), kwargs.get("target"))
            for value in inputs:
                suspect = self._tag(self.pending, value)
                if suspect is not None:
                    self._report_square(suspect, func, reduction)
                    break
        if reduction:
            return
        if func in self.silent_losses:
            self._check_loss_shapes(func, args, kwargs)
        elif func is F.cross_entropy:
            self._check_probability_targets(args, kwargs)

    # -- binary ops, shaping and the tags' travels -----------------------------------------------
    def after(self, func: Any, args: tuple, kwargs: dict, result: Any) -> None:
        if not isinstance(result, Tensor) or not args:
            return
        if self.pending and func in PROPAGATE:
            for value in (*args, *kwargs.values()):
                suspect = self._tag(self.pending, value)
                if suspect is not None:
                    self._remember(self.pending, result, suspect)
                    return
        if func in BINARY:
            self._check_binary(func, args, kwargs, result)
        elif func in SHAPERS:
            self._note_shaping(func, args, result)

    def _check_binary(self, func: Any, args: tuple, kwargs: dict, result: Tensor) -> None:
        first = args[0]
        second = args[1] if len(args) > 1 else kwargs.get("other")
        if not isinstance(first, Tensor) or not isinstance(second, Tensor):
            return
        one, two = first.shape, second.shape
        if one == two:
            return
        count = first.numel()
        if count < 2 or second.numel() != count or result.numel() <= count:
            return
        if _squeezed(one) != _squeezed(two) or _same_data(first, second):
            return
        site = self.ctx.site()
        key = (site.path, site.line) if site else None
        if key is None or key in self.reported:
            return
        marks = [self._tag(self.shaped, first), self._tag(self.shaped, second)]
        if key in marks:
            return  # `a.unsqueeze(1) * b`: the size-1 dimension was added on this very line
        if len(one) == len(two) and any(mark is not None for mark in marks):
            return  # `[N, 1]` against `[1, N]` with an explicit unsqueeze somewhere: an outer op
        comparison = func in COMPARISONS
        self._remember(self.pending, result, {
            "op": op_name(func), "site": site, "shapes": (list(one), list(two)), "result": list(result.shape),
            "count": count, "comparison": comparison,
        })

    def _note_shaping(self, func: Any, args: tuple, result: Tensor) -> None:
        source = args[0]
        if not isinstance(source, Tensor):
            return
        if func is GETITEM:
            index = args[1] if len(args) > 1 else None
            if not (index is None or (type(index) is tuple and any(item is None for item in index))):
                return
        elif func not in EXPLICIT_BROADCASTS and _ones(result.shape) <= _ones(source.shape):
            return
        site = self.ctx.site()
        self._remember(self.shaped, result, (site.path, site.line) if site else None)

    # -- findings ---------------------------------------------------------------------------------
    def _report_square(self, suspect: dict, func: Any, reduction: bool) -> None:
        site: Site = suspect["site"]
        key = (site.path, site.line)
        if key in self.reported:
            return
        self.reported.add(key)
        used = self.ctx.site()
        by = f"`{op_name(func)}`" + (f" at {used.short()}" if used else "")
        one, two = suspect["shapes"]
        count, result = suspect["count"], suspect["result"]
        what = "reduced it" if reduction else "took it as a loss input"
        matches = (", so a count of matches divided by the batch size can exceed 1" if suspect["comparison"] else "")
        self.ctx.evidence(
            self,
            code=None,
            at=site,
            message=(
                f"`{suspect['op']}` broadcast a tensor of shape {one} against one of shape {two} into {result}: each of "
                f"the {count} values of one meets every value of the other ({_pairs(result)} pairs instead of {count}), "
                f"and {by} {what}{matches}; give both the same shape (`.squeeze(-1)` the one with the size-1 "
                f"dimension, or `.view_as()` the other)"
            ),
            data={"op": suspect["op"], "shapes": [one, two], "result": result, "reduced_by": op_name(func),
                  "reduced_at": [used.path, used.line] if used else None},
        )

    def _check_loss_shapes(self, func: Any, args: tuple, kwargs: dict) -> None:
        given = args[0] if args else kwargs.get("input")
        target = args[1] if len(args) > 1 else kwargs.get("target")
        if not isinstance(given, Tensor) or not isinstance(target, Tensor) or given.shape == target.shape:
            return
        try:
            shape = torch.broadcast_shapes(given.shape, target.shape)
        except RuntimeError:
            return  # the loss raises; its error says it
        if shape == given.shape:
            return  # the target broadcasts over the input (one distribution for the whole batch)
        site = self.ctx.site()
        loss = op_name(func)
        where = f" at {site.short()}" if site else ""
        self.ctx.evidence(
            self,
            code=None,
            runtime_code="TL740",
            at=site,
            message=(
                f"`{loss}`{where} got input of shape {list(given.shape)} and target of shape {list(target.shape)}: torch "
                f"broadcasts them to {list(shape)} without a warning, so every input meets every target; reshape one to "
                f"the other (e.g. `input.squeeze(-1)`)"
            ),
            data={"loss": loss, "input": list(given.shape), "target": list(target.shape), "broadcast": list(shape)},
        )

    def _check_probability_targets(self, args: tuple, kwargs: dict) -> None:
        given = args[0] if args else kwargs.get("input")
        target = args[1] if len(args) > 1 else kwargs.get("target")
        if not isinstance(given, Tensor) or not isinstance(target, Tensor) or not target.is_floating_point():
            return
        if target.shape != given.shape or given.dim() == 0 or target.numel() == 0:
            return
        if not self.ctx.device.computes_values or target.is_meta:
            return
        site = self.ctx.site()
        if site is None:
            return
        key = (site.path, site.line)
        if self.value_checks.get(key, 0) >= VALUE_CHECKS:
            return
        self.value_checks[key] = self.value_checks.get(key, 0) + 1
        classes = 1 if target.dim() > 1 else 0
        with torch._C.DisableTorchFunction(), torch.no_grad():
            values = target.detach().double()
            low, high = values.min().item(), values.max().item()
            sums = values.sum(classes)
            stray = ~(((sums - 1).abs() <= 1e-3) | (sums.abs() <= 1e-6))
            stray_rows, rows = int(stray.sum().item()), sums.numel()
            least, most = sums.min().item(), sums.max().item()
        shape = list(target.shape)
        where = f" at {site.short()}"
        opening = (f"`cross_entropy`{where} got a float target of the input's shape {shape}, which torch reads as class "
                   f"probabilities")
        if low < -1e-6 or high > 1 + 1e-6:
            message = (f"{opening}, but its values run from {low:g} to {high:g}: no probabilities; normalise them, or "
                       f"pass class indices as an int64 target of shape {shape[:classes] + shape[classes + 1:]}")
        elif stray_rows:
            message = (f"{opening}, but {stray_rows} of its {rows} rows do not sum to 1 (sums from {least:g} to "
                       f"{most:g}): multi-hot labels make the classes of a sample compete through the softmax; a "
                       f"multi-label problem needs `binary_cross_entropy_with_logits`, and soft labels must sum to 1")
        else:
            return
        # Once per line: each batch's targets give other numbers, hence another message, and
        # the same finding would be listed once per check.
        self.value_checks[key] = VALUE_CHECKS
        self.ctx.evidence(self, code=None, runtime_code="TL740", at=site, message=message,
                          data={"loss": "cross_entropy", "target": shape, "min": low, "max": high,
                                "rows_not_summing_to_1": stray_rows, "rows": rows})

    # -- tags ---------------------------------------------------------------------------------------
    @staticmethod
    def _remember(tags: dict, tensor: Tensor, value: Any) -> None:
        key = id(tensor)
        tags[key] = (weakref.ref(tensor, lambda _ref, key=key: tags.pop(key, None)), value)

    @staticmethod
    def _tag(tags: dict, value: Any) -> Any:
        entry = tags.get(id(value))
        if entry is None or entry[0]() is not value:
            return None
        return entry[1]


def _squeezed(shape: torch.Size) -> tuple[int, ...]:
    return tuple(size for size in shape if size != 1)


def _ones(shape: torch.Size) -> int:
    return sum(1 for size in shape if size == 1)


def _pairs(shape: list[int]) -> int:
    total = 1
    for size in shape:
        total *= size
    return total


def _same_data(first: Tensor, second: Tensor) -> bool:
    """Both operands are views of one tensor (`x[:, None] - x`): a pairwise matrix on purpose."""
    if (first._base if first._base is not None else first) is (second._base if second._base is not None else second):
        return True
    if first.is_meta or second.is_meta:
        return False
    try:
        with torch._C.DisableTorchFunction():
            return first.untyped_storage().data_ptr() == second.untyped_storage().data_ptr() != 0
    except (RuntimeError, NotImplementedError):
        return False


def _silent_broadcasters() -> set:
    """The losses of this torch that broadcast an `[2, 1]` input against a `[2]` target without
    an error or a warning (those that warn are TL716's, from the warning)."""
    silent = set()
    given, target, var = torch.full((2, 1), 0.5), torch.full((2,), 0.5), torch.ones(2, 1)
    for name in BROADCAST_CANDIDATES:
        loss = getattr(F, name, None)
        if loss is None:
            continue
        extra = (var,) if name == "gaussian_nll_loss" else ()
        with warnings.catch_warnings(record=True) as caught, torch._C.DisableTorchFunction():
            warnings.simplefilter("always")
            try:
                loss(given, target, *extra)
            except Exception:
                continue
        if not any("target size" in str(warning.message) for warning in caught):
            silent.add(loss)  # kl_div's warning about reduction="mean" is about something else
    return silent
