from __future__ import annotations

from typing import NamedTuple

import libcst as cst

from torchlint.fix import SAFE, NodeFix
from torchlint.rule import Bad, Good

from ._torchfix_helpers import QualifiedApiRule, spelled_in_scope


class _Move(NamedTuple):
    replacement: str
    exact: bool
    since: str = "2.0"


#: functorch's transforms are thin wrappers that warn and call torch.func's (torch 2.13:
#: torch/_functorch/deprecated.py); the module-based APIs have different replacements.
FUNCTORCH_MOVES = {
    **{f"functorch.{name}": _Move(f"torch.func.{name}", True) for name in (
        "vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "functionalize",
    )},
    "functorch.make_functional": _Move("torch.func.functional_call", False),
    "functorch.make_functional_with_buffers": _Move("torch.func.functional_call", False),
    "functorch.combine_state_for_ensemble": _Move("torch.func.stack_module_state", False),
}


class FunctorchApi(QualifiedApiRule):
    """
    ## What it does
    Flags uses and imports of the `functorch` transforms (`vmap`, `grad`, `grad_and_value`,
    `vjp`, `jvp`, `jacrev`, `jacfwd`, `hessian`, `functionalize`) and of
    `make_functional`/`combine_state_for_ensemble`, which moved into `torch.func` in torch 2.0.

    ## Why is this bad?
    `functorch` is deprecated: each of its transforms now only warns and forwards to
    `torch.func`, and the separate package will go away.

    Not flagged: an import inside `except ImportError:` or behind a version check (a
    fallback for torch < 2.0), after a version check that leaves on newer torch (`if
    torch.__version__ > "1.14": pytest.skip(...)`, or `return`/`raise`), in a test skipped
    by one (`@pytest.mark.skipif(<version check>)`), or anything when `target-torch` is below
    2.0.

    ## Example
    ```python
    from functorch import vmap
    ```

    ## Use instead
    ```python
    from torch.func import vmap
    ```

    ## Fix safety
    Safe: the transforms are the same functions behind a deprecation warning, so
    `from functorch import vmap` becomes `from torch.func import vmap` and `functorch.vmap(f)`
    becomes `torch.func.vmap(f)` (offered when `torch` is imported). `make_functional` and
    `combine_state_for_ensemble` have differently shaped replacements and get no fix.
    """

    code = "TL503"
    name = "functorch-api"
    summary = "`functorch.*` transforms are deprecated; use `torch.func.*`"
    triggers = ("functorch",)
    fix_safety = SAFE
    cases = [
        Bad(
            """
            from functorch import vmap, grad  # error
            batched = vmap(grad(f))
            """,
            fixed="""
            from torch.func import vmap, grad  # error
            batched = vmap(grad(f))
            """,
        ),
        Bad(
            """
            import torch
            import functorch
            from functorch import make_functional  # error
            j = functorch.jacrev(f)(x)  # error
            """,
            fixed="""
            import torch
            import functorch
            from functorch import make_functional  # error
            j = torch.func.jacrev(f)(x)  # error
            """,
        ),
        Bad(
            """
            from functorch import (
                vmap as batched,  # error
                jacrev,  # error
            )
            """,
            fixed="""
            from torch.func import (
                vmap as batched,  # error
                jacrev,  # error
            )
            """,
            note="a parenthesised import keeps its layout",
        ),
        Good(
            """
            try:
                from torch import vmap
            except ImportError:
                from functorch import vmap
            out = vmap(f)(x)
            """,
            note="a fallback for old torch; `vmap` is also bound to torch.vmap, so its use is not reported",
        ),
        Good(
            """
            from torch.func import vmap, functional_call
            import jax
            g = jax.vmap(f)
            """,
            note="torch.func and jax",
        ),
        Good(
            """
            import torch
            if torch.__version__ < "2.0":
                import functorch
                batched = functorch.vmap(f)
            """,
            note="a version-guarded branch",
        ),
        Good(
            """
            import pytest
            import torch

            def test_functional_loss(loss_fn):
                if torch.__version__ > "1.14":
                    raise pytest.skip("make_functional_with_buffers is gone from torch.func")
                from functorch import make_functional_with_buffers
                make_functional_with_buffers(loss_fn)

            @pytest.mark.skipif(torch.__version__ >= "2.0", reason="functorch only")
            def test_vmap():
                from functorch import vmap
                vmap(f)
            """,
            note="code after a version check that leaves on newer torch, and a test skipped by one",
        ),
    ]

    def entry(self, qualified):
        return FUNCTORCH_MOVES.get(qualified)

    def call_message(self, qualified, entry):
        how = "" if entry.exact else " (a different API: see its docs)"
        return f"`{qualified}` is deprecated; use `{entry.replacement}`{how}"

    def import_target(self, qualified, entry):
        return entry.replacement if entry.exact else None

    def call_fix(self, node, qualified, entry):
        spelled = spelled_in_scope(self.ctx, entry.replacement) if entry.exact else None
        if spelled is None:
            return None
        return NodeFix(f"Use `{entry.replacement}`", SAFE, ((node.func, cst.parse_expression(spelled)),))
