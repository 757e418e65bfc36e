from __future__ import annotations

import libcst as cst

from torchlint.fix import SAFE, NodeFix
from torchlint.rule import Bad, Good, Rule

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


class LegacyTensorConstructor(Rule):
    """
    ## What it does
    Flags tensors created by calling the legacy type constructors: `torch.Tensor(...)`,
    `torch.FloatTensor(...)`, `torch.LongTensor(...)`, `torch.cuda.FloatTensor(...)` and the
    rest of that family. Uses that are not calls (`x: torch.Tensor`,
    `isinstance(x, torch.LongTensor)`, `torch.Tensor.add`, `torch.Tensor._make_subclass`) are
    left alone.

    ## Why is this bad?
    The constructors mean two different things depending on their arguments:
    `torch.Tensor(3)` is an *uninitialised* tensor of three elements (garbage values), while
    `torch.Tensor([3])` holds the number 3. They accept no `dtype` or `requires_grad`, the
    `torch.cuda.*Tensor` ones raise on machines without CUDA, and PyTorch documents them as
    legacy. `torch.tensor(data)` always copies data, `torch.empty(shape)` always allocates.

    ## Example
    ```python
    weight = nn.Parameter(torch.Tensor(out_features, in_features))
    labels = torch.LongTensor([0, 2, 1])
    ```

    ## Use instead
    ```python
    weight = nn.Parameter(torch.empty(out_features, in_features))
    labels = torch.tensor([0, 2, 1], dtype=torch.int64)
    ```

    ## Fix safety
    Offered only where the meaning is certain, and then safe: sizes (an integer literal, or
    several arguments) become
    `torch.empty(..., dtype=...)` and a list or tuple literal given to a typed CPU constructor
    becomes `torch.tensor(..., dtype=...)`. `torch.Tensor([1, 2])` gets no fix, because
    `torch.tensor([1, 2])` would infer an integer dtype.
    """

    code = "TL607"
    name = "legacy-tensor-constructor"
    summary = "`torch.Tensor(...)`/`torch.FloatTensor(...)` legacy constructors: shape or data is ambiguous"
    triggers = ("Tensor(",)
    imports = ("torch",)
    fix_safety = SAFE
    cases = [
        Bad(
            """
            import torch
            from torch import nn

            class Linear(nn.Module):
                def __init__(self, n_in, n_out):
                    super().__init__()
                    self.weight = nn.Parameter(torch.Tensor(n_out, n_in))  # error
                    self.bias = nn.Parameter(torch.Tensor(4))  # error
            """,
            fixed="""
            import torch
            from torch import nn

            class Linear(nn.Module):
                def __init__(self, n_in, n_out):
                    super().__init__()
                    self.weight = nn.Parameter(torch.empty(n_out, n_in))  # error
                    self.bias = nn.Parameter(torch.empty(4))  # error
            """,
            note="several arguments or an integer literal are certainly sizes",
        ),
        Bad(
            """
            import torch as T
            from torch import LongTensor

            labels = LongTensor([0, 2, 1])  # error
            mask = T.cuda.ByteTensor(3, 4)  # error
            xs = T.Tensor([1, 2])  # error
            ys = T.FloatTensor(values)  # error
            buf = T.FloatTensor(n, 2)  # error
            none = T.Tensor()  # error
            """,
            fixed="""
            import torch as T
            from torch import LongTensor

            labels = T.tensor([0, 2, 1], dtype=T.int64)  # error
            mask = T.cuda.ByteTensor(3, 4)  # error
            xs = T.Tensor([1, 2])  # error
            ys = T.FloatTensor(values)  # error
            buf = T.empty(n, 2, dtype=T.float32)  # error
            none = T.empty(0)  # error
            """,
            note="aliases; fixes only where the meaning is certain and the device stays the CPU",
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
        qualname = self.ctx.qualname(node.func)
        if qualname not in CONSTRUCTORS:
            return
        spelled = qualname
        args = [arg for arg in node.args if arg.keyword is None]
        if any(arg.star for arg in node.args):
            kind = "ambiguous"
        elif not node.args:
            kind = "empty"
        elif len(args) >= 2 or (args and _is_int_literal(args[0].value)):
            kind = "shape"  # several positional arguments can only be sizes
        elif len(args) == 1 and isinstance(args[0].value, (cst.List, cst.Tuple, cst.ListComp)):
            kind = "data"
        else:
            kind = "ambiguous"
        dtype = CONSTRUCTORS[qualname]
        dtype_text = f", dtype={dtype}" if dtype else ""
        if kind == "empty":
            message = f"`{spelled}()` is a legacy constructor; use `torch.empty(0{dtype_text})`"
        elif kind == "shape":
            message = f"`{spelled}(...)` with sizes allocates uninitialised memory; use `torch.empty(...{dtype_text})`"
        elif kind == "data":
            message = f"`{spelled}(...)` is a legacy constructor; use `torch.tensor(data{dtype_text or ', dtype=...'})`"
        else:
            message = (
                f"`{spelled}(...)` means a shape for ints and data for sequences; use `torch.tensor(data{dtype_text})` "
                f"or `torch.empty(shape{dtype_text})`"
            )
        if qualname.startswith("torch.cuda."):
            message += " with `device=` (this one raises where CUDA is missing)"
        self.report(node, message, fix=self._fix(node, kind, qualname))

    def _fix(self, node: cst.Call, kind: str, qualname: str) -> NodeFix | None:
        torch_name = self._torch_alias()
        dtype = CONSTRUCTORS[qualname]
        if torch_name is None or qualname.startswith("torch.cuda.") or kind == "ambiguous":
            return None
        if kind == "data" and dtype is None:
            return None  # torch.tensor([1, 2]) would infer int64 where torch.Tensor gives float
        factory = "tensor" if kind == "data" else "empty"
        args = [cst.Arg(cst.Integer("0"))] if kind == "empty" else list(node.args)
        if dtype is not None:
            dtype_expr = cst.parse_expression(dtype.replace("torch.", f"{torch_name}.", 1))
            if args and args[-1].comma == cst.MaybeSentinel.DEFAULT:
                args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            args.append(
                cst.Arg(
                    keyword=cst.Name("dtype"),
                    value=dtype_expr,
                    equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
                )
            )
        new = node.with_changes(func=cst.parse_expression(f"{torch_name}.{factory}"), args=args)
        return NodeFix(f"Use `torch.{factory}`", SAFE, ((node, new),))

    def _torch_alias(self) -> str | None:
        for local, target in sorted(self.ctx.aliases.aliases.items()):
            if target == "torch" and self.ctx.qualname(cst.Name(local)) == "torch":
                return local
        return None


def _is_int_literal(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Integer)
