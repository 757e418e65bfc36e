from __future__ import annotations

import re

import libcst as cst

from torchlint.fix import SAFE, UNSAFE, NodeFix
from torchlint.rule import Bad, Good
from torchlint.static.names import dotted_name

from ._integer_values import PY_INT, WholeNumbers
from ._numerics import LocalTags

#: Legacy constructor -> the dtype it creates (None: the default dtype, like torch.empty).
_TYPED = {
    "FloatTensor": "torch.float32",
    "DoubleTensor": "torch.float64",
    "HalfTensor": "torch.float16",
    "BFloat16Tensor": "torch.bfloat16",
    "ByteTensor": "torch.uint8",
    "CharTensor": "torch.int8",
    "ShortTensor": "torch.int16",
    "IntTensor": "torch.int32",
    "LongTensor": "torch.int64",
    "BoolTensor": "torch.bool",
}
CONSTRUCTORS: dict[str, str | None] = {"torch.Tensor": None}
CONSTRUCTORS.update({f"torch.{name}": dtype for name, dtype in _TYPED.items()})
CONSTRUCTORS.update({f"torch.cuda.{name}": dtype for name, dtype in _TYPED.items()})


#: Names spelled like one size or count: `n`, `num_classes`, `hidden_size`, `in_features`.
#: Not names that often hold a list or a tensor, which the constructor reads as data: `size`,
#: `img_size`, `kernel_size` (tuples; torch's ONNX exporter calls `torch.LongTensor(size)`
#: with a list), `src_len` (fairseq: a list of lengths), `pred_classes` (detectron2: a
#: tensor), one-letter names (`d` for a row of data).
SIZE_NAME = re.compile(
    r"^(?:n|num|dim|length|count|hidden)$"
    r"|^(?:n|num)_|_(?:dim|features|channels|count|num|units)$"
    r"|^(?:hidden|batch|vocab|embed|embedding|state)_size$"
)
#: How a legacy constructor call reads: "count" (one argument that is a whole number, the
#: ambiguous one: TL607), "shape", "data", "empty" or "unknown" (TL609).
COUNT, SHAPE, DATA, EMPTY, UNKNOWN = "count", "shape", "data", "empty", "unknown"


class LegacyConstructorCalls(LocalTags):
    """What TL607 and TL609 share: finding legacy constructor calls, reading their arguments,
    and the fix where the meaning is certain."""

    def tag_of(self, expr: cst.BaseExpression) -> str | None:
        return WholeNumbers(self.lookup, self.ctx.qualname).kind(expr)

    def classify(self, node: cst.Call) -> tuple[str, str] | None:
        """(qualified name, how the call reads) for a legacy constructor call, else None."""
        qualname = self.ctx.qualname(node.func)
        if qualname not in CONSTRUCTORS:
            return None
        args = _positional(node)
        if any(arg.star for arg in node.args):
            return qualname, UNKNOWN  # `torch.Tensor(*args)`: sizes, or one list
        if not node.args:
            return qualname, EMPTY
        if len(args) >= 2:
            return qualname, SHAPE  # several positional arguments can only be sizes
        if len(args) != 1:
            return qualname, UNKNOWN
        value = args[0].value
        if type(value) in (cst.List, cst.Tuple, cst.ListComp):
            return qualname, DATA
        if self._certain_int(value):
            return qualname, COUNT
        name = _last_name(value)
        if name is not None and SIZE_NAME.search(name.lower()):
            return qualname, COUNT
        return qualname, UNKNOWN

    def fix_for(self, node: cst.Call, kind: str, qualname: str) -> NodeFix | None:
        torch_name = self._torch_alias()
        dtype = CONSTRUCTORS[qualname]
        if torch_name is None or qualname.startswith("torch.cuda.") or kind == UNKNOWN:
            return None
        if kind == COUNT and not self._certain_int(_positional(node)[0].value):
            return None  # a name spelled like a size may still hold a list
        if kind == DATA and dtype is None:
            return None  # torch.tensor([1, 2]) would infer int64 where torch.Tensor gives float
        factory = "tensor" if kind == DATA else "empty"
        args = [cst.Arg(cst.Integer("0"))] if kind == EMPTY else list(node.args)
        if dtype is None:
            # `torch.Tensor(...)` is made on the default *tensor type*'s device, which no
            # argument names (`set_default_tensor_type(torch.cuda.FloatTensor)` makes it CUDA),
            # and `torch.empty` also follows the default device (`with torch.device("meta")`,
            # `set_default_device`): the plain call is what was meant, but it may move.
            new = node.with_changes(func=cst.parse_expression(f"{torch_name}.{factory}"), args=args)
            return NodeFix(f"Use `torch.{factory}`", UNSAFE, ((node, new),))
        # A typed CPU constructor makes a CPU tensor of its dtype whatever the defaults say;
        # the factory does too once both are spelled out.
        args.append(_keyword("dtype", cst.parse_expression(dtype.replace("torch.", f"{torch_name}.", 1))))
        if not any(arg.keyword is not None and arg.keyword.value == "device" for arg in node.args):
            args.append(_keyword("device", cst.SimpleString('"cpu"')))
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        args = [arg.with_changes(comma=comma) if arg.comma == cst.MaybeSentinel.DEFAULT else arg for arg in args[:-1]] + args[-1:]
        new = node.with_changes(func=cst.parse_expression(f"{torch_name}.{factory}"), args=args)
        return NodeFix(f"Use `torch.{factory}`", SAFE, ((node, new),))

    def _certain_int(self, value: cst.BaseExpression) -> bool:
        return WholeNumbers(self.lookup, self.ctx.qualname).kind(value) == PY_INT

    def _torch_alias(self) -> str | None:
        for local, target in sorted(self.ctx.aliases.aliases.items()):
            if target == "torch" and self.ctx.qualname(cst.Name(local)) == "torch":
                return local
        return None


#: Methods that keep the tensor (or a view or copy of it) in a chain before it is filled.
_CHAIN_METHODS = frozenset({"to", "cuda", "cpu", "float", "double", "half", "long", "int", "bool", "byte", "view", "reshape", "type", "contiguous", "pin_memory"})
#: Collectives that write a received tensor into their first argument.
_RECEIVERS = frozenset({"broadcast", "recv", "irecv", "all_reduce", "reduce", "scatter"})


def _in_place(name: str) -> bool:
    """`uniform_`, `fill_`, `zero_`, `copy_`, `nn.init.zeros_`: writes its tensor."""
    return name.endswith("_") and not name.endswith("__")


def filled_before_use(ctx, node: cst.Call) -> bool:
    """The allocation is written before anything reads it: an in-place fill in its own
    method chain (`torch.FloatTensor(n).uniform_(a, b)`, `....cuda().fill_(v)`), or, once
    assigned (possibly as `nn.Parameter(...)`) to a name or `self.<attr>`, a fill of that
    target in the same function (`x[i] = ...`, `x.zero_()`, `broadcast(x, src)`) or, for an
    attribute, anywhere in the class (`nn.init.zeros_(self.bias)` in `reset_parameters`)."""
    ancestors = ctx.ancestors
    index, current = len(ancestors) - 1, node
    while index >= 1:
        parent, grand = ancestors[index], ancestors[index - 1]
        if type(parent) is cst.Attribute and parent.value is current and type(grand) is cst.Call and grand.func is parent:
            method = parent.attr.value
            if _in_place(method):
                return True
            if method not in _CHAIN_METHODS:
                return False
            current, index = grand, index - 2
            continue
        if type(parent) is cst.Arg and type(grand) is cst.Call and (dotted_name(grand.func) or "").rpartition(".")[2] == "Parameter":
            current, index = grand, index - 2
            continue
        break
    if index >= 1 and type(ancestors[index]) is cst.Arg and _template_buffer(ctx, ancestors[index - 1], ancestors[index]):
        return True
    if index < 0 or type(ancestors[index]) is not cst.Assign or ancestors[index].value is not current:
        return False
    module = ctx.module
    targets = [module.code_for_node(t.target) for t in ancestors[index].targets if type(t.target) in (cst.Name, cst.Attribute)]
    if not targets:
        return False
    scope = ctx.enclosing_class() if all(type(t.target) is cst.Attribute for t in ancestors[index].targets) else None
    scope = scope or ctx.enclosing_function() or module
    from torchlint.static.walker import iter_nodes

    for inner in iter_nodes(scope):
        kind = type(inner)
        if kind is cst.Call:
            func = inner.func
            name = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else ""
            if type(func) is cst.Attribute and _in_place(name) and _rooted_at(module, func.value, targets):
                return True  # x.zero_(), self.bias.data.uniform_(...), x.to(d).zero_()
            if (_in_place(name) or name in _RECEIVERS) and inner.args and _rooted_at(module, inner.args[0].value, targets):
                return True  # nn.init.zeros_(self.bias), broadcast(buffer, src)
        elif kind is cst.AssignTarget or kind is cst.AugAssign:
            target = inner.target
            if type(target) is cst.Subscript and _rooted_at(module, target.value, targets):
                return True  # x[i] = ...
    return False


#: What a tensor kept only as a dtype/device template is used for.
_TEMPLATE_USES = frozenset({"new", "new_empty", "new_zeros", "new_ones", "new_full", "new_tensor", "device", "dtype", "type", "is_cuda"})


def _template_buffer(ctx, call: cst.Call, arg: cst.Arg) -> bool:
    """`self.register_buffer("_float_tensor", torch.FloatTensor(1))` where the class only
    ever reads `self._float_tensor.new(...)` / `.device` / `.dtype`: the values are never read."""
    func = call.func
    if type(func) is not cst.Attribute or func.attr.value != "register_buffer" or len(call.args) < 2 or call.args[1] is not arg:
        return False
    name = call.args[0].value
    cls = ctx.enclosing_class()
    if type(name) is not cst.SimpleString or cls is None or type(func.value) is not cst.Name:
        return False
    attribute = f"{func.value.value}.{name.evaluated_value}"
    module = ctx.module
    from torchlint.static.walker import iter_nodes

    reads = templates = 0
    for inner in iter_nodes(cls):
        if type(inner) is not cst.Attribute:
            continue
        if module.code_for_node(inner) == attribute:
            reads += 1
        elif inner.attr.value in _TEMPLATE_USES and type(inner.value) is cst.Attribute and module.code_for_node(inner.value) == attribute:
            templates += 1
    return reads == templates


def _rooted_at(module: cst.Module, expr: cst.BaseExpression, targets: list[str]) -> bool:
    """`expr` is one of `targets`, or reached from one through attributes and method calls
    (`self.bias.data`, `x.to(device)`)."""
    while True:
        text = module.code_for_node(expr) if type(expr) in (cst.Name, cst.Attribute) else None
        if text is not None and text in targets:
            return True
        if type(expr) is cst.Attribute:
            expr = expr.value
        elif type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in _CHAIN_METHODS:
            expr = expr.func.value
        else:
            return False


def cuda_note(qualname: str) -> str:
    return " with `device=` (this one raises where CUDA is missing)" if qualname.startswith("torch.cuda.") else ""


def _keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    tight = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
    return cst.Arg(keyword=cst.Name(name), value=value, equal=tight)


def _positional(call: cst.Call) -> list[cst.Arg]:
    return [arg for arg in call.args if arg.keyword is None]


def _last_name(node: cst.BaseExpression) -> str | None:
    """`num_classes` for `num_classes` or `self.num_classes`."""
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        return node.attr.value
    return None


class LegacyTensorConstructor(LegacyConstructorCalls):
    """
    ## What it does
    Flags a legacy type constructor (`torch.Tensor`, `torch.FloatTensor`, `torch.LongTensor`,
    `torch.cuda.FloatTensor` and the rest of that family) called with one argument that is a
    whole number: an integer literal, `len(...)`, `int(...)`, `x.size(0)`, `x.shape[0]`,
    `t.numel()`, a local name assigned one of those, or a name spelled like a size or count
    (`n`, `num_classes`, `hidden_size`, `self.in_features`). That is the one call whose meaning
    a reader cannot tell: it allocates that many uninitialised elements.

    An allocation the code fills before reading it says what it is and is left alone: an
    in-place fill in its own chain (`torch.FloatTensor(n).uniform_(a, b)`), or, for the name
    or `self.<attr>` it is assigned to (also as `nn.Parameter(...)`), an in-place write in
    the same function (`x[i] = ...`, `x.zero_()`, `dist.broadcast(x, src)`) or, for an
    attribute, anywhere in the class (`nn.init.zeros_(self.bias)` in `reset_parameters`).
    So is a buffer registered only as a dtype/device template (every read of it is `.new(...)`,
    `.device` or `.dtype`).

    Other calls of these constructors (several sizes, a list, a numpy array, no argument) are
    style and are TL609's, which is off by default. Uses that are not calls
    (`x: torch.Tensor`, `isinstance(x, torch.LongTensor)`, `torch.Tensor.add`) are left alone.


    Off by default: on 17 big public libraries and frameworks with their test suites,
    judged by reviewers who did not write the rule, 0 of 23 sampled findings were right (33
    in all); the wrong ones were `torch.Tensor(n)` filled on the next lines, by an init
    helper, `reset_parameters` or a checkpoint, and `torch.Tensor(0)` as an empty
    placeholder. `--extend-select TL607` turns it on.
    ## Why is this bad?
    The constructors mean two different things depending on their argument:
    `torch.Tensor(3)` is an *uninitialised* tensor of three elements (garbage values), while
    `torch.Tensor([3])` holds the number 3. `torch.LongTensor(label)` written to make a label
    tensor therefore returns `label` random integers, and nothing fails until the numbers are
    wrong. `torch.empty(n)` says it allocates; `torch.tensor([n])` says it holds `n`.

    ## Example
    ```python
    bias = nn.Parameter(torch.Tensor(out_features))
    target = torch.LongTensor(label)  # label = 3: three garbage integers
    ```

    ## Use instead
    ```python
    bias = nn.Parameter(torch.empty(out_features))
    target = torch.tensor([label])
    ```

    ## Fix safety
    Offered only where the argument is certainly a Python int (a literal, `len(...)`,
    `x.size(0)`, a local name assigned one). A typed constructor's fix is safe:
    `torch.FloatTensor(n)` becomes `torch.empty(n, dtype=torch.float32, device="cpu")`, because
    the legacy call makes a CPU tensor even under `with torch.device(...)` or after
    `torch.set_default_device(...)`, which `torch.empty` would follow. `torch.Tensor(n)`'s fix,
    `torch.empty(n)`, is unsafe: the legacy call follows the default tensor type and not the
    default device, and no argument says which device that is. A name that is only spelled
    like a size gets no fix (it may hold a list), nor does a `torch.cuda.*` constructor.
    """

    code = "TL607"
    name = "legacy-tensor-constructor"
    summary = "`torch.Tensor(n)`/`torch.LongTensor(n)` with one whole number allocates `n` garbage values"
    default_enabled = False
    triggers = ("Tensor(",)
    imports = ("torch",)
    fix_safety = UNSAFE
    cases = [
        Bad(
            """
            import torch
            from torch import nn

            class Linear(nn.Module):
                def __init__(self, n_in, out_features):
                    super().__init__()
                    self.weight = nn.Parameter(torch.Tensor(out_features, n_in))
                    self.bias = nn.Parameter(torch.Tensor(out_features))  # error
                    self.scale = nn.Parameter(torch.Tensor(4))  # error
            """,
            fixed="""
            import torch
            from torch import nn

            class Linear(nn.Module):
                def __init__(self, n_in, out_features):
                    super().__init__()
                    self.weight = nn.Parameter(torch.Tensor(out_features, n_in))
                    self.bias = nn.Parameter(torch.Tensor(out_features))  # error
                    self.scale = nn.Parameter(torch.empty(4))  # error
            """,
            note="a literal is certainly a size and is fixed (unsafely: torch.empty follows the default device); a name spelled like one is reported only",
        ),
        Bad(
            """
            import torch as T
            from torch import LongTensor

            def encode(label, tokens, x):
                n = len(tokens)
                a = LongTensor(label)
                b = T.FloatTensor(n)  # error
                c = T.Tensor(x.size(0))  # error
                d = T.cuda.LongTensor(self.num_classes)  # error
                return a, b, c, d
            """,
            fixed="""
            import torch as T
            from torch import LongTensor

            def encode(label, tokens, x):
                n = len(tokens)
                a = LongTensor(label)
                b = T.empty(n, dtype=T.float32, device="cpu")  # error
                c = T.empty(x.size(0))  # error
                d = T.cuda.LongTensor(self.num_classes)  # error
                return a, b, c, d
            """,
            note="a local bound to len(), a size(0), a count-like attribute; `label` may be a list: TL609's",
        ),
        Bad(
            """
            import torch
            from torch import nn

            class Gate(nn.Module):
                def __init__(self, hidden_size):
                    super().__init__()
                    self.shift = nn.Parameter(torch.Tensor(hidden_size))
                    self.scale = nn.Parameter(torch.Tensor(hidden_size))  # error
                    nn.init.zeros_(self.shift)
                    self.register_buffer("bias", torch.FloatTensor(hidden_size))  # error

                def forward(self, x):
                    return (x + self.shift) * self.scale + self.bias.to(x.dtype)

            def histogram(num_bins, values):
                counts = torch.LongTensor(num_bins)  # error
                return counts + values.bincount(minlength=num_bins)
            """,
            note="only `shift` is initialised; the buffer's values are read; `counts` is read while it holds garbage",
        ),
        Good(
            """
            import torch
            from torch import nn
            import torch.distributed as dist

            class Scale(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.gain = nn.Parameter(torch.Tensor(dim))
                    self.reset_parameters()

                def reset_parameters(self):
                    nn.init.ones_(self.gain)

            def noise(batch_size, num_classes):
                picks = torch.LongTensor(batch_size).random_(0, num_classes)
                jitter = torch.FloatTensor(batch_size).cuda().uniform_(-1, 1)
                return picks, jitter

            def positions(n):
                out = torch.IntTensor(n)
                for i in range(n):
                    out[i] = 2 * i
                return out

            def receive(n, src):
                buffer = torch.ByteTensor(n)
                dist.broadcast(buffer, src=src)
                return buffer
            """,
            note="allocations filled before any read: init in reset_parameters, an in-place fill in the chain, item writes, a collective receiving into it",
        ),
        Good(
            """
            import torch
            from torch import nn

            class Embedder(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.dim = dim
                    self.register_buffer("_anchor", torch.FloatTensor(1))

                def forward(self, ids):
                    out = self._anchor.new(ids.shape + (self.dim,))
                    return out.to(self._anchor.device)
            """,
            note="a one-element buffer kept only as a dtype/device template: its values are never read",
        ),
        Good(
            """
            import numpy as np
            import torch

            def to_tensors(values, array, n_in, n_out):
                a = torch.Tensor(values)
                b = torch.FloatTensor([1, 2])
                c = torch.Tensor(np.asarray(array))
                d = torch.Tensor(n_out, n_in)
                e = torch.LongTensor(x.size())
                f = torch.LongTensor(size) + torch.Tensor(img_size) + torch.Tensor(self.kernel_size)
                g = torch.LongTensor(src_len) + torch.IntTensor(instances.pred_classes) + torch.LongTensor(d)
                return a, b, c, d, e, f, g
            """,
            note="data (a list, a name, a numpy array, a `size` or `src_len` that may be a list) and several sizes are TL609's",
        ),
        Good(
            """
            import torch

            def f(x: torch.Tensor) -> torch.Tensor:
                if isinstance(x, (torch.FloatTensor, torch.cuda.FloatTensor)):
                    return torch.Tensor.add(x, 1)
                return x.type(torch.LongTensor)
            """,
            note="annotations, isinstance, unbound methods and type objects passed around",
        ),
        Good(
            """
            import torch

            class Wrapped(torch.Tensor):
                @staticmethod
                def __new__(cls, data):
                    return torch.Tensor._make_subclass(cls, data)
            """,
            note="subclassing Tensor is not constructing with the legacy constructor",
        ),
        Good(
            """
            import torch
            x = torch.tensor([1, 2], dtype=torch.long)
            y = torch.empty(3, 4)
            z = x.new_tensor([1.0])
            """
        ),
        Good(
            """
            class Tensor:
                pass

            t = Tensor(3)
            """,
            note="a project's own Tensor class",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        found = self.classify(node)
        if found is None or found[1] != COUNT:
            return
        if filled_before_use(self.ctx, node):
            return  # an allocation its code fills at once: nothing uninitialised survives
        qualname, kind = found
        dtype = CONSTRUCTORS[qualname]
        dtype_text = f", dtype={dtype}" if dtype else ""
        message = (
            f"`{qualname}(n)` with one whole number allocates n uninitialised elements, it does not hold n: "
            f"use `torch.empty(n{dtype_text})` to allocate or `torch.tensor([n]{dtype_text})` for the value"
        )
        self.report(node, message + cuda_note(qualname), fix=self.fix_for(node, kind, qualname))
