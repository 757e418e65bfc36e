from __future__ import annotations

import libcst as cst

from torchlint.fix import UNSAFE, NodeFix
from torchlint.rule import Bad, Good, Rule

from ._torchfix_helpers import has_double_star, has_star, keyword_arg, positional_args, targets_before, with_keyword

#: function -> index of the positional parameter `use_reentrant` (None: keyword-only).
CHECKPOINT_FUNCTIONS = {
    "torch.utils.checkpoint.checkpoint": None,
    "torch.utils.checkpoint.checkpoint_sequential": 3,
}


class CheckpointWithoutUseReentrant(Rule):
    """
    ## What it does
    Flags `torch.utils.checkpoint.checkpoint(...)` and `checkpoint_sequential(...)` calls
    that do not pass `use_reentrant`.

    ## Why is this bad?
    Without it, torch uses the old reentrant implementation, warns on every call ("the
    use_reentrant parameter should be passed explicitly"), and has announced that omitting
    it will become an error. The reentrant variant does not support keyword arguments to
    the checkpointed function or `torch.autograd.grad`, and when no input requires grad the
    block's parameters silently get no gradients; PyTorch recommends `use_reentrant=False`.

    A call that forwards `**kwargs` may carry `use_reentrant` and is not flagged; nor is
    any call when `target-torch` is below 1.11, which lacks the parameter.

    ## Example
    ```python
    out = checkpoint(block, x)
    ```

    ## Use instead
    ```python
    out = checkpoint(block, x, use_reentrant=False)
    ```

    ## Fix safety
    The fix adds `use_reentrant=False`, PyTorch's recommendation, and is unsafe: it
    switches to a different implementation (different RNG-state and hook behaviour,
    different handling of detached outputs and of inputs without grad), so results may
    change. To keep today's behaviour exactly, pass `use_reentrant=True` instead — that is
    the current default, made explicit.
    """

    code = "TL105"
    name = "checkpoint-without-use-reentrant"
    summary = "`torch.utils.checkpoint` without `use_reentrant`: warns now, an error in future torch"
    triggers = ("checkpoint",)
    imports = ("torch",)
    fix_safety = UNSAFE
    cases = [
        Bad(
            """
            from torch.utils.checkpoint import checkpoint
            y = checkpoint(block, x)  # error
            """,
            fixed="""
            from torch.utils.checkpoint import checkpoint
            y = checkpoint(block, x, use_reentrant=False)  # error
            """,
        ),
        Bad(
            """
            import torch.utils.checkpoint as cp
            import torch

            def forward(self, x):
                x = cp.checkpoint_sequential(self.blocks, 2, x)  # error
                return torch.utils.checkpoint.checkpoint(self.head, x, *rest)  # error
            """,
            note="`*args` cannot carry the keyword-only use_reentrant of checkpoint",
        ),
        Good(
            """
            from torch.utils.checkpoint import checkpoint, checkpoint_sequential
            y = checkpoint(block, x, use_reentrant=False)
            z = checkpoint_sequential(blocks, 2, x, False)
            w = checkpoint(block, x, **ckpt_kwargs)
            """,
            note="passed by keyword, positionally, or possibly through **kwargs",
        ),
        Good(
            """
            from deepspeed import checkpointing
            import fairscale.nn.checkpoint as fc
            y = checkpointing.checkpoint(block, x)
            z = fc.checkpoint_wrapper(block)

            def checkpoint(fn, *args):
                return fn(*args)

            checkpoint(block, x)
            """,
            note="other libraries' and a local checkpoint",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.qualname(node.func)
        if qualified not in CHECKPOINT_FUNCTIONS or targets_before(self.ctx, "1.11"):
            return
        position = CHECKPOINT_FUNCTIONS[qualified]
        if keyword_arg(node, "use_reentrant") is not None or has_double_star(node):
            return
        if position is not None and (has_star(node) or len(positional_args(node)) > position):
            return
        self.report(
            node,
            f"`{qualified.rpartition('.')[2]}` without `use_reentrant`: torch warns and will require it; "
            "pass use_reentrant=False (recommended) or True (today's behaviour)",
            fix=NodeFix("Add `use_reentrant=False`", UNSAFE, ((node, with_keyword(node, "use_reentrant", "False")),)),
        )
