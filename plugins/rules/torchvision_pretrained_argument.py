from __future__ import annotations

import libcst as cst

from torchlint.fix import SAFE, NodeFix
from torchlint.rule import Bad, Good, Rule

from ._torchfix_helpers import is_name, keyword_arg, positional_args, targets_before

#: legacy keyword -> its replacement
LEGACY_KEYWORDS = {"pretrained": "weights", "pretrained_backbone": "weights_backbone"}


class TorchvisionPretrainedArgument(Rule):
    """
    ## What it does
    Flags `pretrained=` and `pretrained_backbone=` passed to torchvision model builders
    (anything called through `torchvision.models`, its submodules and `get_model`), and a
    bool passed as the first positional argument (`resnet50(True)`), which torchvision
    still reads as the old `pretrained`.

    ## Why is this bad?
    torchvision 0.13 replaced the boolean with `weights=` (an enum naming exactly which
    checkpoint), warns on every use of the old keyword, and will remove it.
    `pretrained=True` means the builder's first ImageNet weights (`IMAGENET1K_V1`), which
    for several models is no longer the best available (`weights="DEFAULT"`).

    Not flagged: other libraries' `pretrained=` (`timm.create_model`, `torch.hub.load`),
    or any call when `target-torch` is below 1.12 (torchvision 0.13's torch).

    ## Example
    ```python
    model = torchvision.models.resnet50(pretrained=True)
    backbone = models.resnet18(pretrained=False)
    ```

    ## Use instead
    ```python
    model = torchvision.models.resnet50(weights="IMAGENET1K_V1")   # or weights="DEFAULT"
    backbone = models.resnet18(weights=None)
    ```

    ## Fix safety
    Only `pretrained=False` -> `weights=None` (and `pretrained_backbone=False` ->
    `weights_backbone=None`, and a lone positional `False` -> `weights=None`) is fixed; it is exactly what torchvision does with the old
    keyword, so it is safe. `pretrained=True` needs the model's own weights enum and other
    values need a decision, so they get no fix.
    """

    code = "TL505"
    name = "torchvision-pretrained-argument"
    summary = "torchvision `pretrained=` is deprecated; use `weights=`"
    # A builder is always reached through `torchvision.models` (or `get_model`), so a file
    # with a positional `pretrained` mentions "models" or "get_model".
    triggers = ("pretrained", "models", "get_model")
    imports = ("torchvision",)
    fix_safety = SAFE
    cases = [
        Bad(
            """
            import torchvision
            from torchvision import models
            a = torchvision.models.resnet50(pretrained=True)  # error
            b = models.resnet18(pretrained=False, num_classes=10)  # error
            """,
            fixed="""
            import torchvision
            from torchvision import models
            a = torchvision.models.resnet50(pretrained=True)  # error
            b = models.resnet18(weights=None, num_classes=10)  # error
            """,
        ),
        Bad(
            """
            from torchvision.models.detection import fasterrcnn_resnet50_fpn
            m = fasterrcnn_resnet50_fpn(pretrained=use_pretrained, pretrained_backbone=False)  # error
            n = fasterrcnn_resnet50_fpn(pretrained=False, weights=None)  # error
            """,
            note="a non-literal, and an odd call passing both: reported, never crashed on",
        ),
        Bad(
            """
            import torchvision
            a = torchvision.models.resnet50(True)  # error
            b = torchvision.models.resnet50(False)  # error
            """,
            fixed="""
            import torchvision
            a = torchvision.models.resnet50(True)  # error
            b = torchvision.models.resnet50(weights=None)  # error
            """,
            note="the legacy positional `pretrained`",
        ),
        Good(
            """
            from torchvision.models.vgg import make_layers, cfgs
            layers = make_layers(cfgs["D"], False)
            """,
            note="a bool that is not the first positional argument: a helper's own parameter",
        ),
        Good(
            """
            import timm
            import torch
            a = timm.create_model("resnet50", pretrained=True)
            b = torch.hub.load("pytorch/vision", "resnet18", pretrained=True)
            """,
            note="other libraries keep `pretrained`",
        ),
        Good(
            """
            from torchvision.models import resnet50, ResNet50_Weights
            from . import models
            a = resnet50(weights=ResNet50_Weights.DEFAULT)
            b = models.build(pretrained=True)
            """,
            note="the new API, and a project's own `models` package",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.qualname(node.func) or ""
        if not qualified.startswith("torchvision.models.") or targets_before(self.ctx, "1.12"):
            return
        for old, new in LEGACY_KEYWORDS.items():
            arg = keyword_arg(node, old)
            if arg is None:
                continue
            fix = None
            if is_name(arg.value, "False") and keyword_arg(node, new) is None:
                fix = NodeFix(
                    f"Replace with `{new}=None`", SAFE, ((arg.keyword, cst.Name(new)), (arg.value, cst.Name("None")))
                )
            hint = "=None" if is_name(arg.value, "False") else '="IMAGENET1K_V1" (what True loads) or "DEFAULT"'
            self.report(node, f"`{old}=` is deprecated in torchvision; use `{new}{hint}`", fix=fix)
        self._positional_pretrained(node)

    def _positional_pretrained(self, node: cst.Call) -> None:
        """`resnet50(True)`: before 0.13 the first positional parameter was `pretrained`, and
        torchvision still maps a positional bool there to it, with the same warning."""
        positional = positional_args(node)
        if not positional or not (is_name(positional[0].value, "True") or is_name(positional[0].value, "False")):
            return
        fix = None
        if is_name(positional[0].value, "False") and len(positional) == 1 and keyword_arg(node, "weights") is None:
            fix = NodeFix("Replace with `weights=None`", SAFE, ((positional[0], positional[0].with_changes(keyword=cst.Name("weights"), equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")), value=cst.Name("None"))),))
        hint = "=None" if is_name(positional[0].value, "False") else '="IMAGENET1K_V1" (what True loads) or "DEFAULT"'
        self.report(node, f"a positional bool is the deprecated `pretrained` argument in torchvision; use `weights{hint}`", fix=fix)
