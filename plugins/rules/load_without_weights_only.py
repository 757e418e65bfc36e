from __future__ import annotations

import libcst as cst

from torchlint.fix import UNSAFE, NodeFix
from torchlint.rule import Bad, Good, Rule

from ._torchfix_helpers import has_double_star, in_compat_fallback, keyword_arg, positional_args, target_torch, with_keyword

LOAD_FUNCTIONS = frozenset({"torch.load", "torch.serialization.load"})


class LoadWithoutWeightsOnly(Rule):
    """
    ## What it does
    Flags `torch.load(...)` calls that do not pass `weights_only`, unless the configured
    `target-torch` is 2.6 or newer (where `weights_only=True` is the default) or older than
    1.13 (which lacks the parameter). A call that forwards `**kwargs` may carry it and is
    not flagged, nor is a retry inside `except TypeError:` or a version check. An explicit `weights_only=False` is a deliberate choice and is not flagged.

    Without `target-torch` the rule flags: it cannot know which default the code will run
    under, and the call then behaves differently across versions — before 2.6 it unpickles
    anything (running code from the file), from 2.6 it refuses checkpoints holding
    non-tensor objects. Set `target-torch = "2.6"` (or newer) to turn the rule off.

    ## Why is this bad?
    With `weights_only=False`, the default before torch 2.6, `torch.load` runs the pickle
    machinery on the file: a malicious checkpoint executes arbitrary code. torch 2.4 and 2.5
    warn about exactly this call.

    ## Example
    ```python
    state = torch.load("model.pt", map_location="cpu")
    ```

    ## Use instead
    ```python
    state = torch.load("model.pt", map_location="cpu", weights_only=True)
    # weights_only=False only for files you trust that need full pickle support
    ```

    ## Fix safety
    The fix adds `weights_only=True` and is unsafe: checkpoints that pickle other objects
    (an argparse Namespace, numpy arrays, custom classes) then fail to load. It is not
    offered when `pickle_module` is passed, which `weights_only=True` rejects.
    """

    code = "TL302"
    name = "load-without-weights-only"
    summary = "`torch.load` without `weights_only` unpickles arbitrary code on torch < 2.6"
    #: The error that proves it when the program runs: torch >= 2.6 refuses the checkpoint.
    proven_by = (("UnpicklingError", r"Weights only load failed"),)
    triggers = ("load",)
    imports = ("torch",)
    fix_safety = UNSAFE
    cases = [
        Bad(
            """
            import torch
            state = torch.load("ckpt.pt", map_location="cpu")  # error
            """,
            fixed="""
            import torch
            state = torch.load("ckpt.pt", map_location="cpu", weights_only=True)  # error
            """,
        ),
        Bad(
            """
            import pickle
            from torch import load
            obj = load(path, None, pickle)  # error
            """,
            note="no fix with a pickle_module",
        ),
        Good(
            """
            import torch
            a = torch.load(p, weights_only=True)
            b = torch.load(p, map_location="cpu", weights_only=False)
            """,
            note="explicit either way",
        ),
        Good(
            """
            import torch

            def restore(path, **kwargs):
                return torch.load(path, **kwargs)
            """,
            note="**kwargs may carry weights_only (TorchFix's fix duplicates the keyword here)",
        ),
        Good(
            """
            import torch
            try:
                state = torch.load(path, map_location="cpu", weights_only=True)
            except TypeError:  # torch < 1.13 has no weights_only
                state = torch.load(path, map_location="cpu")
            """,
            note="a compatibility fallback for torch without the parameter",
        ),
        Good(
            """
            import json, pickle
            cfg = json.load(f)
            obj = pickle.load(f)
            """,
            note="other loaders",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) not in LOAD_FUNCTIONS:
            return
        if keyword_arg(node, "weights_only") is not None or has_double_star(node):
            return
        if in_compat_fallback(self.ctx):
            return  # `except TypeError:` retrying without weights_only for an old torch
        target = target_torch(self.ctx)
        if target is not None and not ((1, 13) <= target < (2, 6)):
            return
        if target is None:
            message = ("`torch.load` without `weights_only`: before torch 2.6 it unpickles arbitrary code, from 2.6 it "
                       "refuses non-tensor objects; pass weights_only=True (or False for trusted files)")
        else:
            message = ("`torch.load` without `weights_only` defaults to full unpickling on torch < 2.6: a malicious "
                       "file runs code; pass weights_only=True (or False for trusted files)")
        pickle_module = keyword_arg(node, "pickle_module") or (positional_args(node)[2:3] or [None])[0]
        fix = None
        if pickle_module is None:
            fix = NodeFix("Add `weights_only=True`", UNSAFE, ((node, with_keyword(node, "weights_only", "True")),))
        self.report(node, message, fix=fix)
