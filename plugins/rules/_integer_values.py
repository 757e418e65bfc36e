"""Which expressions certainly hold whole numbers, read from source alone (TL401, TL402, TL607,
TL609).

Two kinds, because the rules need different things:

- ``PY_INT``: a Python int (`len(x)`, `int(v)`, `x.size(0)`, `x.shape[1]`, `t.numel()`,
  `a // b` of ints, an integer literal). A legacy constructor given one allocates that many
  elements.
- ``INT_TENSOR``: a tensor whose values are whole numbers (`torch.tensor(len(x))`,
  `(pred == y).sum()`, `x.long()`, `torch.bincount(...)`, `x.round()`), or a float cast of one.
  `log(1 + n)` and `exp(n) - 1` lose nothing for such values: the precision problem is a small
  fractional `x`.

A name is followed through `lookup` (a `LocalTags` environment: the kind an assignment in the
same scope gave it). Its spelling (`n_steps`, `num_tokens`, `word_count`: `COUNT_NAME`) is
evidence only for a caller that asks for it (`by_spelling=True`).
"""

from __future__ import annotations

import re
from typing import Callable, Optional

import libcst as cst

PY_INT = "int"
INT_TENSOR = "int-tensor"
#: A tuple or list of Python ints (`win_size: Tuple[int, int]`): one item of it is a ``PY_INT``.
INT_SEQUENCE = "int-sequence"

#: Builtins and math functions that return an int whatever their (valid) arguments.
_INT_FUNCTIONS = frozenset({"len", "int", "math.ceil", "math.floor", "math.factorial", "math.comb", "math.perm",
                            "math.gcd", "math.lcm", "math.isqrt", "math.prod", "operator.index"})
#: Tensor methods returning a Python int.
_INT_METHODS = frozenset({"numel", "nelement", "dim", "ndimension", "element_size", "bit_length", "get_device"})
#: Methods and torch functions whose tensor result holds whole numbers whatever the input.
_WHOLE_METHODS = frozenset({"long", "int", "short", "byte", "char", "bool", "round", "floor", "ceil", "trunc", "sign",
                            "argmax", "argmin", "argsort", "bincount", "count_nonzero", "nonzero", "isnan", "isinf",
                            "isfinite", "eq", "ne", "lt", "le", "gt", "ge", "logical_not", "logical_and", "logical_or"})
_WHOLE_FUNCTIONS = frozenset(f"torch.{name}" for name in (
    "round", "floor", "ceil", "trunc", "sign", "argmax", "argmin", "argsort", "bincount", "count_nonzero", "nonzero",
    "randint", "randperm", "randint_like", "ones", "zeros", "ones_like", "zeros_like", "eye", "isnan", "isinf", "isfinite", "eq", "ne", "lt", "le", "gt", "ge",
    "logical_not", "logical_and", "logical_or"))
#: Methods that keep a tensor's values whole when its input's are (casts, moves, views, sums).
_KEEP_METHODS = frozenset({"float", "double", "half", "bfloat16", "to", "cuda", "cpu", "detach", "clone", "contiguous",
                           "view", "reshape", "squeeze", "unsqueeze", "flatten", "expand", "expand_as", "permute",
                           "transpose", "t", "sum", "cumsum", "abs", "max", "min", "type_as", "repeat"})
_KEEP_FUNCTIONS = frozenset({"torch.sum", "torch.cumsum", "torch.abs", "torch.as_tensor", "torch.tensor",
                             "torch.stack", "torch.cat"})
#: Arithmetic that maps whole numbers to whole numbers.
_WHOLE_OPERATORS = ("Add", "Subtract", "Multiply", "FloorDivide", "Modulo", "BitAnd", "BitOr", "BitXor",
                    "LeftShift", "RightShift")
#: Names whose spelling says they count something: `n`, `num_steps`, `n_tokens`, `word_count`,
#: `step`, `epoch`, `durations`. Only for a rule that accepts spelling as evidence of a whole
#: number. Not `*_length` or `*_step` (`bond_length`, `time_step` are often fractions). A
#: string key counts like a name: `sample["durations"]`.
COUNT_NAME = re.compile(
    r"^(?:n|num|count|counts|step|steps|global_step|epoch|epochs|iteration|iterations|idx|index)$"
    r"|^(?:n|num)_|_(?:count|counts|num|steps|epochs?|idx|index)$"
    # Speech models predict `log(1 + duration)` of durations counted in frames (FastSpeech).
    # Exact names only: `log_dur` is the log of one, a fraction.
    r"|^(?:dur|durs|duration|durations)$"
)

Lookup = Callable[[str], Optional[str]]
#: Rule modules must not touch libcst at import (torchlint.lazy): the node type stays a string.
QualName = Callable[["cst.BaseExpression"], Optional[str]]


class WholeNumbers:
    """Answers `kind(expr)` for one file position: `lookup` gives a local name's kind (None
    when unknown), `qualname` resolves imports. With `by_spelling`, a name or attribute spelled
    like a count (`COUNT_NAME`) counts as a Python int."""

    def __init__(self, lookup: Lookup, qualname: QualName, *, by_spelling: bool = False) -> None:
        self.lookup, self.qualname, self.by_spelling = lookup, qualname, by_spelling

    def _spelled_as_count(self, name: str) -> Optional[str]:
        return PY_INT if self.by_spelling and COUNT_NAME.search(name) else None

    def kind(self, expr: cst.BaseExpression) -> Optional[str]:
        """``PY_INT``, ``INT_TENSOR``, or None when `expr` may hold a fraction."""
        kind = type(expr).__name__
        if kind == "Integer":
            return PY_INT
        if kind == "Name":
            return self.lookup(expr.value) or self._spelled_as_count(expr.value)
        if kind == "UnaryOperation":
            return self.kind(expr.expression) if type(expr.operator).__name__ != "Not" else None
        if kind == "BinaryOperation":
            return self._binary_kind(expr)
        if kind == "Comparison":
            return INT_TENSOR  # a bool (tensor): 0 or 1
        if kind == "Subscript":
            return self._subscript_kind(expr)
        if kind == "Attribute":
            return PY_INT if expr.attr.value in ("ndim", "itemsize") else self._spelled_as_count(expr.attr.value)
        if kind == "Call":
            return self._call_kind(expr)
        if kind == "IfExp":
            body, orelse = self.kind(expr.body), self.kind(expr.orelse)
            return None if body is None or orelse is None else (body if body == orelse else INT_TENSOR)
        return None

    def _binary_kind(self, expr: cst.BinaryOperation) -> Optional[str]:
        operator = type(expr.operator).__name__
        if operator not in _WHOLE_OPERATORS:
            return None
        left = self.kind(expr.left)
        right = self.kind(expr.right)
        if operator == "FloorDivide" and (left or right):
            # `a // b` is whole even for floats; its kind follows the known side.
            return INT_TENSOR if INT_TENSOR in (left, right) else left or right
        if left is None or right is None:
            return None
        return INT_TENSOR if INT_TENSOR in (left, right) else PY_INT

    def _subscript_kind(self, expr: cst.Subscript) -> Optional[str]:
        value = expr.value
        if type(value).__name__ == "Attribute" and value.attr.value == "shape":
            return PY_INT if _single_index(expr) else None  # `x.shape[0]`; `x.shape[1:]` is a tuple
        if type(value).__name__ == "Call" and _method(value) == "size" and not value.args:
            return PY_INT if _single_index(expr) else None  # `x.size()[0]`
        if _single_index(expr) and type(value).__name__ == "Name" and self.lookup(value.value) == INT_SEQUENCE:
            return PY_INT  # `win_size[0]` of `win_size: Tuple[int, int]`
        if _single_index(expr) and type(expr.slice[0].slice.value).__name__ == "SimpleString":
            key = expr.slice[0].slice.value.evaluated_value
            if isinstance(key, str) and self._spelled_as_count(key):
                return INT_TENSOR  # `sample["durations"]`, `batch["n_tokens"]`
        inner = self.kind(value)
        return INT_TENSOR if inner == INT_TENSOR else None

    def _call_kind(self, call: cst.Call) -> Optional[str]:
        name = self.qualname(call.func)
        if name is None and type(call.func).__name__ == "Name":
            name = call.func.value  # builtins are not imports: `len`, `int`, `round`
        if name in _INT_FUNCTIONS:
            return PY_INT
        if name == "round":
            return PY_INT if len(call.args) == 1 else None  # `round(x, 2)` keeps a fraction
        if name in _WHOLE_FUNCTIONS:
            return INT_TENSOR
        if name in _KEEP_FUNCTIONS:
            return self._first_argument_tensor_kind(call)
        if name is not None and name.rpartition(".")[2] in _GRID_FUNCTIONS:
            return self._whole_grid(call)
        if name == "torch.arange":
            return INT_TENSOR if self._whole_arange(call) else None
        method = _method(call)
        if method is None:
            return None
        if method == "size":
            return PY_INT if call.args else None  # `x.size(0)`; `x.size()` is a torch.Size
        if method in _INT_METHODS:
            return PY_INT
        if method == "item":
            return PY_INT if self.kind(call.func.value) == INT_TENSOR else None
        if method in _WHOLE_METHODS:
            return INT_TENSOR
        if method in _KEEP_METHODS:
            inner = self.kind(call.func.value)
            return INT_TENSOR if inner is not None else None
        return None

    def _whole_arange(self, call: cst.Call) -> bool:
        """`arange(end)` counts 0, 1, 2...; `arange(start, end[, step])` is whole when start and
        step are (a `dtype=` changes the type, not the values)."""
        if any(arg.star for arg in call.args):
            return False
        positional = [arg.value for arg in call.args if arg.keyword is None]
        keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
        if len(positional) + len(set(keywords) & {"start", "end", "step"}) == 0:
            return False
        start = keywords.get("start", positional[0] if len(positional) >= 2 else None)
        step = keywords.get("step", positional[2] if len(positional) >= 3 else None)
        return all(part is None or self.kind(part) is not None for part in (start, step))

    def _whole_grid(self, call: cst.Call) -> Optional[str]:
        """`torch.meshgrid(a, b)` (or a project's `ndgrid(a, b)` wrapping it) of whole-number
        tensors: the grid repeats their values."""
        tensors = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
        if not tensors or any(arg.star for arg in call.args):
            return None
        return INT_TENSOR if all(self.kind(tensor) is not None for tensor in tensors) else None

    def _first_argument_tensor_kind(self, call: cst.Call) -> Optional[str]:
        """`torch.tensor(len(x))`, `torch.sum(mask)`: whole when the data is."""
        if not call.args or call.args[0].keyword is not None or call.args[0].star:
            return None
        data = call.args[0].value
        if type(data).__name__ in ("List", "Tuple"):
            elements = [element.value for element in data.elements]
            whole = elements and all(self.kind(element) is not None for element in elements)
            return INT_TENSOR if whole else None
        return INT_TENSOR if self.kind(data) is not None else None


#: Grid builders: torch's, and the name projects give their wrapper of it (timm's `ndgrid`).
_GRID_FUNCTIONS = frozenset({"meshgrid", "ndgrid"})
_SEQUENCE_ANNOTATIONS = frozenset({"Tuple", "tuple", "List", "list", "Sequence"})


def annotation_kind(annotation: "cst.BaseExpression | None") -> Optional[str]:
    """``PY_INT`` for `int`, ``INT_SEQUENCE`` for `Tuple[int, int]`, `tuple[int, ...]`,
    `List[int]`, `Sequence[int]`; None for anything else."""
    if annotation is None:
        return None
    kind = type(annotation).__name__
    if kind == "Name":
        return PY_INT if annotation.value == "int" else None
    if kind != "Subscript":
        return None
    container = annotation.value
    name = container.attr.value if type(container).__name__ == "Attribute" else getattr(container, "value", None)
    if name not in _SEQUENCE_ANNOTATIONS:
        return None
    items = [element.slice for element in annotation.slice]
    if not items or any(type(item).__name__ != "Index" for item in items):
        return None
    values = [item.value for item in items]
    whole = all(type(v).__name__ == "Ellipsis" or annotation_kind(v) == PY_INT for v in values)
    return INT_SEQUENCE if whole and any(type(v).__name__ != "Ellipsis" for v in values) else None


def _single_index(expr: cst.Subscript) -> bool:
    return len(expr.slice) == 1 and type(expr.slice[0].slice).__name__ == "Index"


def _method(call: cst.Call) -> Optional[str]:
    return call.func.attr.value if type(call.func).__name__ == "Attribute" else None


def last_name_part(expr: cst.BaseExpression) -> Optional[str]:
    """`num_steps` for `num_steps` or `self.num_steps`; None for other expressions."""
    kind = type(expr).__name__
    if kind == "Name":
        return expr.value
    if kind == "Attribute":
        return expr.attr.value
    return None
