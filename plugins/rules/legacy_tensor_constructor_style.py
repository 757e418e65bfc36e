from __future__ import annotations

import libcst as cst

from torchlint.fix import UNSAFE
from torchlint.rule import Bad, Good

from .legacy_tensor_constructor import CONSTRUCTORS, COUNT, DATA, EMPTY, SHAPE, LegacyConstructorCalls, cuda_note


class LegacyTensorConstructorStyle(LegacyConstructorCalls):
    """
    ## What it does
    Flags the calls of the legacy type constructors (`torch.Tensor(...)`,
    `torch.FloatTensor(...)`, `torch.LongTensor(...)`, `torch.cuda.FloatTensor(...)` and the
    rest of that family) that TL607 leaves alone: several sizes (`torch.Tensor(out, in)`), a
    list or tuple (`torch.LongTensor([0, 2])`), an argument that may be data (a list
    variable, a numpy array), or no argument. Off by default: these calls do what they say,
    and the change is one of style. The ambiguous one, a single whole number, is TL607's.

    ## Why is this bad?
    PyTorch documents the constructors as legacy. They accept no `dtype`, `device` or
    `requires_grad`, the `torch.cuda.*Tensor` ones raise on machines without CUDA, and the
    same call means a shape or data depending on its argument's type at run time.
    `torch.tensor(data)` always copies data, `torch.empty(shape)` always allocates.

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
    Offered only where the meaning is certain. For a typed CPU constructor it is safe and
    spells out what the legacy call did: several sizes become
    `torch.empty(..., dtype=..., device="cpu")`, no argument `torch.empty(0, dtype=...,
    device="cpu")`, and a list or tuple literal `torch.tensor(..., dtype=..., device="cpu")`.
    The device is pinned because the legacy constructors ignore the default device
    (`with torch.device("meta"):`, `torch.set_default_device(...)`) and the factories follow
    it. `torch.Tensor(a, b)` and `torch.Tensor()` become `torch.empty(...)` as an unsafe fix:
    `torch.Tensor` follows the default tensor type, which no argument can name. Nothing else is
    fixed: `torch.Tensor([1, 2])` would become an integer tensor under `torch.tensor`, and
    `torch.Tensor(array)` is float32 whatever the numpy array holds while
    `torch.tensor(array)` keeps float64 (and a name may hold an int, which is a size).
    """

    code = "TL609"
    name = "legacy-tensor-constructor-style"
    summary = "`torch.Tensor(a, b)`/`torch.LongTensor([...])` legacy constructors: use `torch.empty`/`torch.tensor`"
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
                def __init__(self, n_in, n_out):
                    super().__init__()
                    self.weight = nn.Parameter(torch.Tensor(n_out, n_in))  # error
                    self.bias = nn.Parameter(torch.Tensor(n_out))
            """,
            fixed="""
            import torch
            from torch import nn

            class Linear(nn.Module):
                def __init__(self, n_in, n_out):
                    super().__init__()
                    self.weight = nn.Parameter(torch.empty(n_out, n_in))  # error
                    self.bias = nn.Parameter(torch.Tensor(n_out))
            """,
            note="several sizes are certainly a shape; one whole number is TL607's",
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
            dims = T.Tensor(*shape)  # error
            """,
            fixed="""
            import torch as T
            from torch import LongTensor

            labels = T.tensor([0, 2, 1], dtype=T.int64, device="cpu")  # error
            mask = T.cuda.ByteTensor(3, 4)  # error
            xs = T.Tensor([1, 2])  # error
            ys = T.FloatTensor(values)  # error
            buf = T.empty(n, 2, dtype=T.float32, device="cpu")  # error
            none = T.empty(0)  # error
            dims = T.Tensor(*shape)  # error
            """,
            note="aliases; fixes only where the meaning is certain; typed constructors pin the CPU they always used",
        ),
        Bad(
            """
            import numpy as np
            import torch

            def to_tensor(array: np.ndarray, label):
                return torch.Tensor(array), torch.LongTensor(label)  # error
            """,
            fixed="""
            import numpy as np
            import torch

            def to_tensor(array: np.ndarray, label):
                return torch.Tensor(array), torch.LongTensor(label)  # error
            """,
            note="no fix where the argument may be numpy: torch.tensor(array) would keep float64",
        ),
        Good(
            """
            import torch

            def f(n, x):
                return torch.Tensor(n), torch.FloatTensor(x.size(0)), torch.Tensor(4)
            """,
            note="one whole number: TL607's finding, not this one",
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
            class Tensor:
                pass

            t = Tensor(3, 4)
            """,
            note="a project's own Tensor class",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        found = self.classify(node)
        if found is None or found[1] == COUNT:
            return
        qualname, kind = found
        dtype = CONSTRUCTORS[qualname]
        dtype_text = f", dtype={dtype}" if dtype else ""
        if kind == EMPTY:
            message = f"`{qualname}()` is a legacy constructor; use `torch.empty(0{dtype_text})`"
        elif kind == SHAPE:
            message = f"`{qualname}(...)` with sizes is a legacy constructor; use `torch.empty(...{dtype_text})`"
        elif kind == DATA:
            message = f"`{qualname}(...)` is a legacy constructor; use `torch.tensor(data{dtype_text or ', dtype=...'})`"
        else:
            message = (
                f"`{qualname}(...)` means a shape for ints and data for sequences; use `torch.tensor(data{dtype_text})` "
                f"or `torch.empty(shape{dtype_text})`"
            )
        self.report(node, message + cuda_note(qualname), fix=self.fix_for(node, kind, qualname))
