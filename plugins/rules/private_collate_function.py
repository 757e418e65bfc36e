from __future__ import annotations

import libcst as cst

from torchlint.fix import SAFE, NodeFix
from torchlint.rule import Bad, Good

from ._torchfix_helpers import QualifiedApiRule, spelled_in_scope


class _Public:
    since = "1.11"  # when torch.utils.data exported them

    def __init__(self, replacement: str) -> None:
        self.replacement = replacement


PRIVATE_COLLATE = {
    "torch.utils.data._utils.collate.default_collate": _Public("torch.utils.data.default_collate"),
    "torch.utils.data._utils.collate.default_convert": _Public("torch.utils.data.default_convert"),
}


class PrivateCollateFunction(QualifiedApiRule):
    """
    ## What it does
    Flags `torch.utils.data._utils.collate.default_collate` and `default_convert`, reached
    through the private `_utils` module, and their imports.

    ## Why is this bad?
    `_utils` is private and may move without notice; the same functions have been public
    as `torch.utils.data.default_collate` / `default_convert` since torch 1.11.

    ## Example
    ```python
    from torch.utils.data._utils.collate import default_collate
    ```

    ## Use instead
    ```python
    from torch.utils.data import default_collate
    ```

    ## Fix safety
    Safe: the public names are the very same function objects (checked on torch 2.13). An
    import is rewritten only when every name it imports has a public equivalent; a call is
    rewritten when `torch` (or `torch.utils.data`) is already imported.
    """

    code = "TL508"
    name = "private-collate-function"
    summary = "Private `torch.utils.data._utils.collate.default_collate/convert`; use the public names"
    triggers = ("_utils",)
    fix_safety = SAFE
    cases = [
        Bad(
            """
            from torch.utils.data._utils.collate import default_collate  # error
            batch = default_collate(samples)
            """,
            fixed="""
            from torch.utils.data import default_collate  # error
            batch = default_collate(samples)
            """,
        ),
        Bad(
            """
            import torch
            b = torch.utils.data._utils.collate.default_convert(x)  # error
            from torch.utils.data._utils.collate import default_collate, collate  # error
            """,
            fixed="""
            import torch
            b = torch.utils.data.default_convert(x)  # error
            from torch.utils.data._utils.collate import default_collate, collate  # error
            """,
            note="an import that also takes a name with no public twin is not rewritten",
        ),
        Good(
            """
            from torch.utils.data import default_collate, default_convert
            from torch.utils.data.dataloader import default_collate as dc
            """,
            note="the public names",
        ),
        Good(
            """
            from ._utils.collate import default_collate
            from . import _utils
            b = _utils.collate.default_collate(x)
            """,
            note="relative imports inside torch.utils.data itself",
        ),
    ]

    def entry(self, qualified):
        return PRIVATE_COLLATE.get(qualified)

    def call_message(self, qualified, entry):
        return f"`{qualified}` is private; use `{entry.replacement}`"

    def import_message(self, qualified, entry):
        return f"import of private `{qualified}`; use `{entry.replacement}`"

    def import_target(self, qualified, entry):
        return entry.replacement

    def call_fix(self, node, qualified, entry):
        spelled = spelled_in_scope(self.ctx, entry.replacement)
        if spelled is None:
            return None
        return NodeFix(f"Use `{entry.replacement}`", SAFE, ((node.func, cst.parse_expression(spelled)),))
