from __future__ import annotations

import libcst as cst

from torchlint.fix import SAFE, NodeFix
from torchlint.rule import Bad, Good, Rule

from torchlint.static.names import dotted_name


class TorchvisionSubmoduleImportAlias(Rule):
    """
    ## What it does
    Flags `import torchvision.<sub> as <sub>` (e.g. `import torchvision.models as models`),
    which spells `from torchvision import <sub>` the long way (pylint's
    `consider-using-from-import`).

    ## Why is this bad?
    It is only style: both forms bind the same module object to the same name, so neither
    shadows anything the other does not. Off by default for that reason; turn it on for
    consistency with TorchFix's TOR203.

    ## Example
    ```python
    import torchvision.models as models
    ```

    ## Use instead
    ```python
    from torchvision import models
    ```

    ## Fix safety
    Safe: torchvision's package attributes are its submodules, so both statements bind the
    same object. Offered only for a statement importing that one module.
    """

    code = "TL507"
    name = "torchvision-submodule-import-alias"
    summary = "`import torchvision.X as X` is `from torchvision import X` spelled the long way"
    default_enabled = False
    triggers = ("torchvision.",)
    fix_safety = SAFE
    cases = [
        Bad(
            """
            import torchvision.models as models  # error
            import torchvision.transforms as transforms, os  # error
            """,
            fixed="""
            from torchvision import models  # error
            import torchvision.transforms as transforms, os  # error
            """,
        ),
        Bad(
            """
            def build():
                import torchvision.datasets as datasets  # error
                return datasets
            """,
            fixed="""
            def build():
                from torchvision import datasets  # error
                return datasets
            """,
        ),
        Good(
            """
            from torchvision import models, transforms
            import torchvision.transforms as T
            import torchvision.models.detection as detection
            import torchvision
            """,
            note="a different alias, a deeper module, and plain imports",
        ),
        Good(
            """
            import torch.nn as nn
            import timm.models as models
            """,
            note="other packages",
        ),
    ]

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted_name(alias.name) or ""
            package, _, sub = full.partition(".")
            if package != "torchvision" or not sub or "." in sub:
                continue
            if alias.asname is None or type(alias.asname.name) is not cst.Name or alias.asname.name.value != sub:
                continue
            fix = None
            if len(node.names) == 1:
                new = cst.ImportFrom(module=cst.Name("torchvision"), names=[cst.ImportAlias(name=cst.Name(sub))])
                fix = NodeFix(f"Replace with `from torchvision import {sub}`", SAFE, ((node, new),))
            self.report(alias, f"`import torchvision.{sub} as {sub}` is `from torchvision import {sub}`", fix=fix)
