from __future__ import annotations

from torchlint.rule import Bad, Good

from ._torchfix_helpers import QualifiedApiRule

_V2_TO_TENSOR = frozenset({"torchvision.transforms.v2.ToTensor", "torchvision.transforms.v2._deprecated.ToTensor"})


class _Entry:
    since = "2.1"  # torchvision 0.16, which pairs with torch 2.1, deprecated it


class TransformsV2ToTensor(QualifiedApiRule):
    """
    ## What it does
    Flags `torchvision.transforms.v2.ToTensor`: its import, each call of the imported name,
    and every reference through a module attribute, called or not (`v2.ToTensor()`, or
    `v2.ToTensor` handed to a pipeline builder uncalled). The v1
    `torchvision.transforms.ToTensor` is not deprecated and is not flagged.

    ## Why is this bad?
    `v2.ToTensor` is deprecated and warns on construction; it will be removed. The v2 API
    splits its two jobs: converting to a tensor image and rescaling to `[0, 1]` floats.

    ## Example
    ```python
    from torchvision.transforms import v2
    t = v2.Compose([v2.ToTensor(), v2.Normalize(mean, std)])
    ```

    ## Use instead
    ```python
    t = v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean, std)])
    ```
    """

    code = "TL506"
    name = "transforms-v2-to-tensor"
    summary = "`torchvision.transforms.v2.ToTensor` is deprecated; use `ToImage()` + `ToDtype(torch.float32, scale=True)`"
    triggers = ("ToTensor",)
    report_references = True
    cases = [
        Bad(
            """
            from torchvision.transforms import v2
            t = v2.Compose([v2.ToTensor(), v2.Normalize(m, s)])  # error
            """
        ),
        Bad(
            """
            import torchvision.transforms.v2 as T
            from torchvision.transforms.v2 import ToTensor, Resize  # error
            a = T.ToTensor()  # error
            """
        ),
        Bad(
            """
            import torchvision.transforms.v2
            from torchvision.transforms import v2
            from torchvision.transforms.v2 import ToTensor  # error
            steps = [v2.ToTensor, v2.Normalize]  # error
            name = torchvision.transforms.v2.ToTensor.__name__  # error
            t = ToTensor()  # error
            """,
            note="uncalled references, and a call of the imported name",
        ),
        Good(
            """
            from torchvision import transforms
            from torchvision.transforms import ToTensor
            t = transforms.Compose([transforms.ToTensor(), ToTensor()])
            """,
            note="the v1 ToTensor is not deprecated",
        ),
        Good(
            """
            import torch
            from torchvision.transforms import v2
            t = v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])
            """,
            note="the replacement",
        ),
    ]

    def visit_Attribute(self, node):
        self.report_reference(node)

    def entry(self, qualified):
        return _Entry if qualified in _V2_TO_TENSOR else None

    def call_message(self, qualified, entry):
        return "`transforms.v2.ToTensor` is deprecated; use `v2.ToImage()` then `v2.ToDtype(torch.float32, scale=True)`"

    def import_message(self, qualified, entry):
        return "import of the deprecated `transforms.v2.ToTensor`; use `v2.ToImage()` then `v2.ToDtype(torch.float32, scale=True)`"
