from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from torchlint.rule import Bad, Good
from torchlint.static.names import dotted_name
from torchlint.static.walker import iter_nodes

from ._calls import argument, keyword
from ._numerics import LocalTags

LOSS_FUNCTIONS = {
    "torch.nn.functional.cross_entropy": "cross_entropy",
    "torch.nn.functional.nll_loss": "nll_loss",
}
LOSS_MODULES = {
    **{f"{prefix}.CrossEntropyLoss": "CrossEntropyLoss" for prefix in ("torch.nn", "torch.nn.modules", "torch.nn.modules.loss")},
    **{f"{prefix}.NLLLoss": "NLLLoss" for prefix in ("torch.nn", "torch.nn.modules", "torch.nn.modules.loss")},
}
#: torch functions whose result is integer indices of a dimension (or random class indices).
INDEX_FUNCTIONS = frozenset(
    {"torch.randint", "torch.argmax", "torch.argmin", "torch.randperm", "torch.multinomial", "torch.bucketize"}
)
#: Factories that make int64 tensors when given `dtype=torch.long` (or int literals).
FACTORIES = frozenset(
    {
        "torch.zeros", "torch.ones", "torch.full", "torch.empty", "torch.tensor", "torch.as_tensor",
        "torch.zeros_like", "torch.ones_like", "torch.full_like", "torch.arange",
    }
)
INT_DTYPES = frozenset({"torch.long", "torch.int64", "torch.int", "torch.int32"})
FLOAT_DTYPES = frozenset(
    {"torch.float", "torch.float32", "torch.float64", "torch.double", "torch.half", "torch.float16", "torch.bfloat16"}
)
FLOAT_CASTS = frozenset({"float", "double", "half", "bfloat16"})
#: Methods that keep a tensor's dtype and values.
KEEP_METHODS = frozenset(
    {"view", "reshape", "squeeze", "unsqueeze", "flatten", "contiguous", "clone", "detach", "cuda", "cpu", "long"}
)


@dataclass(frozen=True)
class Indices:
    origin: str  # "`torch.randint(...)`"


@dataclass(frozen=True)
class FloatIndices:
    origin: str
    cast: str  # "`.float()`"


class FloatClassIndexTarget(LocalTags):
    """
    ## What it does
    Flags `F.cross_entropy` / `nn.CrossEntropyLoss` (and `F.nll_loss` / `nn.NLLLoss`) calls
    whose TARGET is class indices cast to a floating type: `.float()`, `.double()`, `.half()`,
    `.bfloat16()` or `.to(torch.float32)` applied to something that evidently holds class
    indices — `torch.randint(...)`, `argmax`/`argmin` (without `keepdim`), `.max(dim)[1]`,
    `.max(dim).indices`, `.long()`, a factory with `dtype=torch.long`, or `torch.tensor` of int
    literals — directly or through local variables. The loss module is recognised inline, as a
    variable, or as a `self.<attr>`, when the file never assigns that name anything else.

    ## Why is this bad?
    Class-index targets must be int64. A float target of the index shape (`(N,)` for `(N, C)`
    logits) raises `RuntimeError: expected target dtype to be Long or Byte, but got Float`
    (torch 2.13), so the line can never have run; a float target with the logits' own shape is
    read as class *probabilities* (since torch 1.10) and gives a different loss without any
    error. Either way the cast is a mistake made while fighting a dtype error elsewhere.

    Float targets that really are probabilities (soft labels, mixup, `one_hot(...).float()`,
    label smoothing done by hand) are correct and are not flagged; neither is a `y.float()`
    whose origin the rule cannot see (a batch from a DataLoader may hold soft labels).

    ## Example
    ```python
    labels = logits.argmax(dim=1)
    loss = F.cross_entropy(student_logits, labels.float())
    ```

    ## Use instead
    ```python
    loss = F.cross_entropy(student_logits, labels)  # int64 class indices
    ```
    """

    code = "TL108"
    name = "float-class-index-target"
    summary = "`cross_entropy`/`nll_loss` target made float from class indices: they must stay int64"
    #: The error that proves it when the program runs.
    proven_by = (("RuntimeError", r"expected scalar type Long but found|expected target dtype to be Long|Expected .*\bLong\b|not implemented for 'Float'"),)
    triggers = ("cross_entropy", "CrossEntropyLoss", "nll_loss", "NLLLoss")
    cases = [
        Bad(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn

            def distill(student, teacher, x):
                labels = teacher(x).argmax(dim=1)
                a = F.cross_entropy(student(x), labels.float())  # error
                fake = torch.randint(0, 10, (8,)).float()
                b = nn.CrossEntropyLoss()(student(x), fake)  # error
                idx = torch.max(teacher(x), 1)[1]
                c = F.nll_loss(student(x).log_softmax(1), idx.to(torch.float32))  # error
                return a + b + c
            """
        ),
        Bad(
            """
            import torch
            from torch import nn

            class Trainer:
                def __init__(self):
                    self.criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

                def step(self, out, n):
                    target = torch.zeros(n, dtype=torch.long)
                    return self.criterion(out, target=target.half())  # error
            """,
            note="a `self.<attr>` loss module; target by keyword",
        ),
        Bad(
            """
            import torch
            from torch import nn

            def train(model, criterion, x):
                labels = torch.tensor([0, 2, 1, 1])
                return criterion(model(x), labels.cuda().float())  # error

            criterion = nn.CrossEntropyLoss()
            """,
            note="a criterion defined once in the file and passed in",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F

            def train(model, loader):
                for x, y in loader:
                    loss = F.cross_entropy(model(x), y.float())
            """,
            note="a DataLoader's `y` may be soft labels: origin unknown, not flagged",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F

            def smooth(logits, y, eps=0.1):
                soft = F.one_hot(y, 10).float() * (1 - eps) + eps / 10
                a = F.cross_entropy(logits, soft)
                b = F.cross_entropy(logits, F.one_hot(y.long(), 10).float())
                return a + b
            """,
            note="probability targets built from indices are correct",
        ),
        Good(
            """
            import torch
            from torch import nn

            mse = nn.MSELoss()
            criterion = nn.CrossEntropyLoss()
            criterion = nn.MSELoss()

            def f(out, logits):
                idx = logits.argmax(1)
                return mse(out, idx.float()), criterion(out, idx.float())
            """,
            note="regression losses take float targets; a name bound to two losses is unknown",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F

            def f(logits, training):
                y = torch.randint(0, 10, (8,))
                if training:
                    y = y.float()
                y = F.softmax(torch.randn(8, 10), 1)
                return F.cross_entropy(logits, y.float()), F.cross_entropy(logits, logits.argmax(1))
            """,
            note="re-assigned with probabilities; int64 indices are right",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._loss_names: dict[str, str] = {}

    # -- which names hold a CrossEntropyLoss / NLLLoss ----------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        """Names (and `self.<attr>`s) the file only ever assigns one kind of loss module."""
        seen: dict[str, set[Optional[str]]] = {}
        # Exact types, not isinstance: libcst's classes are ABCs (slow to test) and never
        # subclassed, and this loop meets every node of the file.
        other_bindings = (cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr)
        # Assignments and loops are statements, which no expression holds: the walk need not
        # enter expressions (most of a file's nodes), unless the text may hold a `:=`.
        skip = () if ":=" in self.ctx.text else (cst.BaseExpression,)
        for item in iter_nodes(node, skip=skip):
            kind = type(item)
            if kind is cst.Assign:
                label = self._loss_module_label(item.value)
                for target in item.targets:
                    key = _target_key(target.target)
                    if key is not None:
                        seen.setdefault(key, set()).add(label)
            elif kind in other_bindings:
                key = _target_key(item.target)
                if key is not None:
                    seen.setdefault(key, set()).add(None)
        self._loss_names = {key: labels.pop() for key, labels in seen.items() if len(labels) == 1 and None not in labels}

    def _loss_module_label(self, expr: cst.BaseExpression) -> Optional[str]:
        if type(expr) is cst.Call:
            return LOSS_MODULES.get(self.ctx.qualname(expr.func) or "")
        return None

    def _loss_label(self, call: cst.Call) -> Optional[str]:
        qualname = self.ctx.qualname(call.func)
        if qualname is not None:
            return LOSS_FUNCTIONS.get(qualname)
        inline = self._loss_module_label(call.func)
        if inline is not None:
            return inline
        key = dotted_name(call.func)
        if key is not None and key.count(".") <= 1:
            if "." in key:
                owner, _, attr = key.partition(".")
                key = "self." + attr if owner == "self" else None
            return self._loss_names.get(key) if key is not None else None
        return None

    # -- what a target expression holds ------------------------------------------------------
    def tag_of(self, expr: cst.BaseExpression):
        if type(expr) is cst.Name:
            return self.lookup(expr.value)
        if type(expr) is cst.Subscript:
            if _is_max_indices(expr, self.ctx):
                return Indices(f"`{_short(self.ctx.module.code_for_node(expr))}`")
            inner = self.tag_of(expr.value)
            return inner if isinstance(inner, Indices) else None
        if type(expr) is cst.Attribute and expr.attr.value == "indices":
            if type(expr.value) is cst.Call and _method_or_function(expr.value, self.ctx) in ("max", "min"):
                return Indices(f"`{_short(self.ctx.module.code_for_node(expr))}`")
            return None
        if type(expr) is cst.Call:
            return self._call_tag(expr)
        return None

    def _call_tag(self, call: cst.Call):
        qualname = self.ctx.qualname(call.func)
        if qualname is not None:
            indices = (
                (qualname in INDEX_FUNCTIONS and not _keepdim(call))
                or (qualname in FACTORIES and (_int_dtype(call, self.ctx) or _int_literals(call, qualname)))
                or qualname == "torch.LongTensor"
            )
            # Spelled out only when it is the answer: generating code is the costliest step here.
            return Indices(f"`{_short(self.ctx.module.code_for_node(call.func))}(...)`") if indices else None
        func = call.func
        if type(func) is not cst.Attribute:
            return None
        method = func.attr.value
        if method in ("argmax", "argmin") and not _keepdim(call):
            return Indices(f"`.{method}(...)`")
        if method == "long" and not call.args:
            return Indices("`.long()`")
        inner = self.tag_of(func.value)
        if inner is None:
            return None
        if method in KEEP_METHODS:
            return inner
        if method == "to":
            dtype = _to_dtype(call, self.ctx)
            if dtype in FLOAT_DTYPES and isinstance(inner, Indices):
                return FloatIndices(inner.origin, f"`.to({dtype})`")
            if dtype in INT_DTYPES:
                return Indices(inner.origin)
            return inner if dtype is None else None
        if method in FLOAT_CASTS and not call.args and isinstance(inner, Indices):
            return FloatIndices(inner.origin, f"`.{method}()`")
        return None

    # -- the check ---------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        label = self._loss_label(node)
        if label is None:
            return
        target = argument(node, "target", 1)
        if target is None or target.star:
            return
        tag = self.tag_of(target.value)
        if not isinstance(tag, FloatIndices):
            return
        self.report(
            target.value,
            f"{label} target is class indices ({tag.origin}) made float by {tag.cast}: class indices must "
            "stay int64 — a float target of this shape raises 'expected target dtype to be Long', "
            "and one with the input's shape is read as probabilities",
        )


def _target_key(target: cst.BaseExpression) -> Optional[str]:
    if type(target) is cst.Name:
        return target.value
    if type(target) is cst.Attribute and type(target.value) is cst.Name and target.value.value == "self":
        return "self." + target.attr.value
    return None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."


def _keepdim(call: cst.Call) -> bool:
    arg = keyword(call, "keepdim")
    return arg is not None and not (type(arg.value) is cst.Name and arg.value.value == "False")


def _dtype_name(expr: cst.BaseExpression, ctx) -> Optional[str]:
    return ctx.qualname(expr)


def _int_dtype(call: cst.Call, ctx) -> bool:
    arg = keyword(call, "dtype")
    return arg is not None and _dtype_name(arg.value, ctx) in INT_DTYPES


def _int_literals(call: cst.Call, qualname: str) -> bool:
    """`torch.tensor([0, 2, 1])`: a list of int literals makes an int64 tensor."""
    if qualname not in ("torch.tensor", "torch.as_tensor") or keyword(call, "dtype") is not None:
        return False
    first = argument(call, "data", 0)
    if first is None or type(first.value) not in (cst.List, cst.Tuple) or not first.value.elements:
        return False
    return all(type(element.value) is cst.Integer for element in first.value.elements)


def _to_dtype(call: cst.Call, ctx) -> Optional[str]:
    """The dtype `.to(...)` converts to when it is spelled as one, else None (a device move)."""
    arg = keyword(call, "dtype")
    if arg is None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        arg = positional[0] if positional else None
    if arg is None:
        return None
    name = _dtype_name(arg.value, ctx)
    if name in INT_DTYPES or name in FLOAT_DTYPES:
        return name
    return None


def _method_or_function(call: cst.Call, ctx) -> Optional[str]:
    """"max" for `x.max(1)` and `torch.max(x, 1)`; the call must name a dimension."""
    qualname = ctx.qualname(call.func)
    if qualname in ("torch.max", "torch.min"):
        return qualname[6:] if len(call.args) >= 2 else None
    if qualname is None and type(call.func) is cst.Attribute and call.func.attr.value in ("max", "min"):
        return call.func.attr.value if call.args else None
    return None


def _is_max_indices(expr: cst.Subscript, ctx) -> bool:
    """`x.max(1)[1]` / `torch.max(x, 1)[1]`: the indices half of the (values, indices) pair."""
    if type(expr.value) is not cst.Call or _method_or_function(expr.value, ctx) is None:
        return False
    if len(expr.slice) != 1 or type(expr.slice[0].slice) is not cst.Index:
        return False
    index = expr.slice[0].slice.value
    return type(index) is cst.Integer and index.value == "1"
