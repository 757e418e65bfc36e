from __future__ import annotations

import libcst as cst

from torchlint.fix import SAFE, NodeFix
from torchlint.rule import Bad, Good

from ._deprecations import SAFE_CALL_SHAPES, deprecated
from ._torchfix_helpers import QualifiedApiRule, has_star, keyword_arg, positional_args, spelled_in_scope


class DeprecatedTorchFunction(QualifiedApiRule):
    """
    ## What it does
    Flags calls to, and imports of, deprecated torch functions and modules: `torch.qr`,
    `chain_matmul`, `cholesky`, `ger`, `lu_solve`, `norm`, `range`, `svd`,
    `triangular_solve`, `lu`, `nn.UpsamplingNearest2d`, `nn.UpsamplingBilinear2d`,
    `nn.utils.weight_norm`, `testing.assert_allclose`, `utils._pytree._register_pytree_node`
    and `backends.cuda.sdp_kernel`. The message names the replacement and how it differs.

    The table (`plugins/rules/_deprecations.py`) is data shared with TL501. With
    `target-torch` set, a name deprecated after that release is not reported (its
    replacement may not exist there).

    ## Why is this bad?
    Deprecated functions warn at run time and will be removed; several have subtly
    different semantics from their replacements (`torch.range` includes `end` and returns
    float32; `torch.svd` returns `V` where `torch.linalg.svd` returns `Vh`), so migrating
    before removal is cheaper than after.

    After `from torch import svd`, the import is reported, and each call of `svd` too when
    the replacement differs (every call needs its own change); after `from torch import ger`
    only the import is (its fix, `from torch import outer as ger`, migrates every use).
    Not flagged: code inside `except ImportError:` or a version check (a fallback for old
    torch).

    ## Example
    ```python
    y = torch.ger(a, b)
    Q, R = torch.qr(A)
    ```

    ## Use instead
    ```python
    y = torch.outer(a, b)
    Q, R = torch.linalg.qr(A)
    ```

    ## Fix safety
    Fixes are offered only where the replacement is exactly equivalent, and they are safe:
    `torch.ger` -> `torch.outer` (same arguments and result), `torch.qr(A)` ->
    `torch.linalg.qr(A)` and `torch.cholesky(A)` -> `torch.linalg.cholesky(A)` when called
    with the input alone, `torch.chain_matmul(a, b, ...)` -> `torch.linalg.multi_dot([a, b,
    ...])` with two or more matrices (multi_dot rejects one), and `from torch import ger` ->
    `from torch import outer as ger`. The others change semantics and get no fix.
    """

    code = "TL502"
    name = "deprecated-torch-function"
    summary = "Call or import of a deprecated torch function; the message names its replacement"
    triggers = (
        "qr", "chain_matmul", "cholesky", "ger", "lu", "norm", "range", "svd", "triangular_solve",
        "Upsampling", "weight_norm", "assert_allclose", "_register_pytree_node", "sdp_kernel",
    )
    fix_safety = SAFE
    cases = [
        Bad(
            """
            import torch
            y = torch.ger(a, b)  # error
            q, r = torch.qr(A)  # error
            m = torch.chain_matmul(a, b, c)  # error
            """,
            fixed="""
            import torch
            y = torch.outer(a, b)  # error
            q, r = torch.linalg.qr(A)  # error
            m = torch.linalg.multi_dot([a, b, c])  # error
            """,
        ),
        Bad(
            """
            import torch
            import torch.nn as nn
            q, r = torch.qr(A, some=False)  # error
            m = torch.chain_matmul(a)  # error
            up = nn.UpsamplingBilinear2d(scale_factor=2)  # error
            layer = nn.utils.weight_norm(nn.Linear(2, 2))  # error
            idx = torch.range(0, 9)  # error
            """,
            note="no fix where the replacement is not exactly equivalent",
        ),
        Bad(
            """
            from torch import ger  # error
            from torch import range as r, norm  # error
            y = ger(a, b)
            z = r(0, 3)  # error
            """,
            fixed="""
            from torch import outer as ger  # error
            from torch import range as r, norm  # error
            y = ger(a, b)
            z = r(0, 3)  # error
            """,
            note="an odd alias (`range as r`) is fine; a call of an imported name is reported unless the import's fix migrates it (`ger`)",
        ),
        Bad(
            """
            from torch import linalg, qr  # error
            from torch.backends.cuda import sdp_kernel  # error
            from torch.utils import _pytree
            from torch.utils._pytree import _register_pytree_node  # error
            q, r = qr(A)  # error
            with sdp_kernel(enable_flash=False):  # error
                pass
            _register_pytree_node(Point, flatten, unflatten)  # error
            _pytree._register_pytree_node(Box, flatten, unflatten)  # error
            """,
            note="calls of names imported from deprecated paths",
        ),
        Good(
            """
            import torch
            n = torch.linalg.vector_norm(x)
            q, r = torch.linalg.qr(A)
            for i in range(10):
                pass
            t = x.norm()
            """,
            note="the replacements, builtin range, and the Tensor.norm method",
        ),
        Good(
            """
            import torch
            if hasattr(torch.nn.attention, "sdpa_kernel"):
                ctx = torch.nn.attention.sdpa_kernel([backend])
            else:
                ctx = torch.backends.cuda.sdp_kernel(enable_flash=True)
            """,
            note="a fallback behind a feature check",
        ),
        Good(
            """
            import numpy as np
            n = np.linalg.norm(x)
            q, r = np.linalg.qr(A)
            """,
            note="numpy's functions of the same names",
        ),
    ]

    def entry(self, qualified):
        return deprecated(qualified)

    def call_message(self, qualified, entry):
        return f"`{qualified}` is deprecated since torch {entry.since}; use `{entry.replacement}` ({entry.note})"

    def import_message(self, qualified, entry):
        return f"import of `{qualified}`, deprecated since torch {entry.since}; use `{entry.replacement}` ({entry.note})"

    def import_target(self, qualified, entry):
        return entry.replacement if entry.safe_fix and qualified not in SAFE_CALL_SHAPES and qualified != "torch.chain_matmul" else None

    def call_fix(self, node, qualified, entry):
        if not entry.safe_fix or has_star(node):
            return None
        spelled = spelled_in_scope(self.ctx, entry.replacement)
        if spelled is None:
            return None
        new_func = cst.parse_expression(spelled)
        if qualified == "torch.chain_matmul":
            return _multi_dot_fix(node, new_func)
        shape = SAFE_CALL_SHAPES.get(qualified)
        if shape is not None and not _fits(node, *shape):
            return None
        return NodeFix(f"Replace with `{entry.replacement}`", SAFE, ((node.func, new_func),))


def _fits(node: cst.Call, most_positional: int, keywords: frozenset[str]) -> bool:
    used = [arg.keyword.value for arg in node.args if arg.keyword is not None]
    return len(positional_args(node)) + len(used) <= most_positional and set(used) <= keywords


def _multi_dot_fix(node: cst.Call, new_func: cst.BaseExpression) -> NodeFix | None:
    matrices = positional_args(node)
    out = keyword_arg(node, "out")
    if len(matrices) < 2 or len(matrices) + (out is not None) != len(node.args):
        return None  # multi_dot needs two or more tensors; other keywords are unknown
    elements = [cst.Element(value=arg.value) for arg in matrices]
    args = [cst.Arg(value=cst.List(elements=elements))]
    if out is not None:
        args.append(out.with_changes(comma=cst.MaybeSentinel.DEFAULT))
    return NodeFix("Replace with `torch.linalg.multi_dot`", SAFE, ((node, node.with_changes(func=new_func, args=args)),))
