from __future__ import annotations

from typing import NamedTuple

import libcst as cst

from torchlint.fix import SAFE, UNSAFE, NodeFix
from torchlint.rule import Bad, Good

from ._torchfix_helpers import QualifiedApiRule, has_star, positional_args, spelled_in_scope, target_torch


class _AmpMove(NamedTuple):
    replacement: str
    device: str
    kind: str  # "autocast", "scaler", "custom"
    since: str = "2.4"


AMP_MOVES = {
    "torch.cuda.amp.autocast": _AmpMove("torch.amp.autocast", "cuda", "autocast"),
    "torch.cuda.amp.GradScaler": _AmpMove("torch.amp.GradScaler", "cuda", "scaler"),
    "torch.cuda.amp.custom_fwd": _AmpMove("torch.amp.custom_fwd", "cuda", "custom"),
    "torch.cuda.amp.custom_bwd": _AmpMove("torch.amp.custom_bwd", "cuda", "custom"),
    "torch.cpu.amp.autocast": _AmpMove("torch.amp.autocast", "cpu", "autocast"),
    "torch.cpu.amp.GradScaler": _AmpMove("torch.amp.GradScaler", "cpu", "scaler"),
}
# Aliases of the same objects reached through submodules.
AMP_MOVES.update({
    "torch.cuda.amp.autocast_mode.autocast": AMP_MOVES["torch.cuda.amp.autocast"],
    "torch.cuda.amp.grad_scaler.GradScaler": AMP_MOVES["torch.cuda.amp.GradScaler"],
    "torch.cuda.amp.autocast_mode.custom_fwd": AMP_MOVES["torch.cuda.amp.custom_fwd"],
    "torch.cuda.amp.autocast_mode.custom_bwd": AMP_MOVES["torch.cuda.amp.custom_bwd"],
})

#: torch.cuda.amp.autocast(enabled, dtype, cache_enabled): positional order of the old class.
_AUTOCAST_PARAMS = ("enabled", "dtype", "cache_enabled")


class CudaAmpApi(QualifiedApiRule):
    """
    ## What it does
    Flags `torch.cuda.amp.autocast`, `GradScaler`, `custom_fwd`, `custom_bwd` (and the
    `torch.cpu.amp` pair), deprecated in torch 2.4 for the device-generic `torch.amp` API.

    ## Why is this bad?
    Each use emits a FutureWarning (`torch.cuda.amp.autocast(args...)` is deprecated. Please
    use `torch.amp.autocast('cuda', args...)`) and the old names will be removed.

    Not flagged: when `target-torch` is below 2.4 (`torch.amp.custom_fwd(device_type=)`
    does not exist before 2.4, `torch.amp.GradScaler("cuda")` before 2.3), or inside
    `except ImportError:` / a version check.

    ## Example
    ```python
    scaler = torch.cuda.amp.GradScaler()
    with torch.cuda.amp.autocast(dtype=torch.bfloat16):
        loss = model(x)
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler("cuda")
    with torch.amp.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x)
    ```

    ## Fix safety
    The fix inserts the device and turns the old positional arguments of `autocast`
    (`enabled, dtype, cache_enabled`) into keywords, since `torch.amp.autocast`'s second
    parameter is `dtype`. `GradScaler`, `custom_fwd` and `custom_bwd` forward exactly to the
    new API, so their fix is safe when `target-torch` is 2.4 or newer and unsafe otherwise
    (torch before 2.3/2.4 lacks the replacement). The `autocast` fix is always unsafe: the
    old class passes `dtype=torch.float16` where `torch.amp.autocast("cuda")` uses
    `torch.get_autocast_dtype("cuda")`, which `torch.set_autocast_dtype` may have changed,
    and the old class is a no-op under TorchScript. `from torch.cuda.amp import GradScaler`
    becomes `from torch.amp import GradScaler` (its default device is "cuda"); other imports
    get no fix because every use would need a device argument.
    """

    code = "TL504"
    name = "cuda-amp-api"
    summary = "`torch.cuda.amp.*` is deprecated; use `torch.amp.*` with a device argument"
    triggers = ("cuda.amp", "cpu.amp")
    fix_safety = UNSAFE
    cases = [
        Bad(
            """
            import torch
            scaler = torch.cuda.amp.GradScaler(2.0 ** 10)  # error
            with torch.cuda.amp.autocast(True, torch.bfloat16):  # error
                y = model(x)
            """,
            fixed="""
            import torch
            scaler = torch.amp.GradScaler("cuda", 2.0 ** 10)  # error
            with torch.amp.autocast("cuda", enabled=True, dtype=torch.bfloat16):  # error
                y = model(x)
            """,
            note="old positional autocast arguments become keywords",
        ),
        Bad(
            """
            import torch
            from torch.cuda.amp import autocast  # error
            from torch.cuda.amp import GradScaler  # error

            class F(torch.autograd.Function):
                @staticmethod
                @torch.cuda.amp.custom_fwd  # error
                def forward(ctx, x):
                    return x

                @staticmethod
                @torch.cuda.amp.custom_bwd  # error
                def backward(ctx, g):
                    return g
            """,
            fixed="""
            import torch
            from torch.cuda.amp import autocast  # error
            from torch.amp import GradScaler  # error

            class F(torch.autograd.Function):
                @staticmethod
                @torch.amp.custom_fwd(device_type="cuda")  # error
                def forward(ctx, x):
                    return x

                @staticmethod
                @torch.amp.custom_bwd(device_type="cuda")  # error
                def backward(ctx, g):
                    return g
            """,
        ),
        Good(
            """
            import torch
            scaler = torch.amp.GradScaler("cuda")
            with torch.autocast("cuda"), torch.amp.autocast(device_type="cpu"):
                pass
            """,
            note="the new API",
        ),
        Good(
            """
            try:
                from torch.amp import GradScaler
            except ImportError:
                from torch.cuda.amp import GradScaler
            scaler = GradScaler()
            """,
            note="a compatibility fallback",
        ),
        Good(
            """
            import torch
            if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
                scaler = torch.amp.GradScaler("cuda")
            else:
                scaler = torch.cuda.amp.GradScaler()
            """,
            note="a feature check",
        ),
    ]

    def entry(self, qualified):
        return AMP_MOVES.get(qualified)

    def call_message(self, qualified, entry):
        return f"`{qualified}` is deprecated since torch 2.4; use {_new_spelling(entry)}"

    def import_target(self, qualified, entry):
        return entry.replacement if entry.kind == "scaler" and entry.device == "cuda" else None

    def import_fix_safety(self):
        return self._exact_fix_safety()

    def _exact_fix_safety(self) -> str:
        target = target_torch(self.ctx)
        return SAFE if target is not None and target >= (2, 4) else UNSAFE

    def call_fix(self, node, qualified, entry):
        spelled = spelled_in_scope(self.ctx, entry.replacement)
        if spelled is None or has_star(node):
            return None
        device = cst.Arg(value=cst.SimpleString(f'"{entry.device}"'))
        if entry.kind == "custom":
            keyword = cst.Arg(
                keyword=cst.Name("device_type"), value=cst.SimpleString(f'"{entry.device}"'),
                equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
            )
            args, safety = [*node.args, keyword], self._exact_fix_safety()
        elif entry.kind == "scaler":
            args, safety = [device, *node.args], self._exact_fix_safety()
        else:
            positional = positional_args(node)
            if len(positional) > len(_AUTOCAST_PARAMS):
                return None
            args = [device]
            for index, arg in enumerate(node.args):
                if arg.keyword is None:
                    arg = arg.with_changes(
                        keyword=cst.Name(_AUTOCAST_PARAMS[index]),
                        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
                    )
                args.append(arg)
            safety = UNSAFE
        if len(args) > 1:
            args[0] = args[0].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        new = node.with_changes(func=cst.parse_expression(spelled), args=args)
        return NodeFix(f"Use {_new_spelling(entry)}", safety, ((node, new),))

    def visit_Decorator(self, node: cst.Decorator) -> None:
        """`@torch.cuda.amp.custom_fwd` without parentheses."""
        target = node.decorator
        if type(target) is not cst.Attribute:
            return
        qualified = self.ctx.qualname(target)
        found = self._active(qualified)
        if found is None or found.kind != "custom":
            return
        from ._torchfix_helpers import in_compat_fallback

        if in_compat_fallback(self.ctx):
            return
        fix = None
        spelled = spelled_in_scope(self.ctx, found.replacement)
        if spelled is not None:
            new = cst.parse_expression(f'{spelled}(device_type="{found.device}")')
            fix = NodeFix(f"Use {_new_spelling(found)}", self._exact_fix_safety(), ((target, new),))
        self.report(target, self.call_message(qualified, found), fix=fix)


def _new_spelling(entry: _AmpMove) -> str:
    if entry.kind == "custom":
        return f'`{entry.replacement}(..., device_type="{entry.device}")`'
    return f'`{entry.replacement}("{entry.device}", ...)`'
