from __future__ import annotations

import libcst as cst

from torchlint.findings import Severity
from torchlint.rule import Bad, Good, Rule

from ._calls import keyword
from ._distributed import DDP
from torchlint.semantic.program_facts import is_test_path


class DdpFindUnusedParameters(Rule):
    """
    ## What it does
    Flags `DistributedDataParallel(..., find_unused_parameters=True)` written as a literal
    `True`. A value read from a configuration or a command-line flag
    (`find_unused_parameters=cfg.find_unused`) is left alone: somebody decided per run. So
    are test files (`test_*.py`, `tests/`, `testing/`), which exercise the flag on purpose.

    ## Why is this bad?
    With the flag on, DDP walks the autograd graph from the outputs after every forward pass
    to find the parameters that will get no gradient, and marks them ready itself. That
    traversal runs every step, on every rank, whether or not any parameter is unused, and
    PyTorch warns about it at runtime when it finds none. It also hides real bugs: a layer
    that was meant to be trained but is never reached by the loss (a typo in `forward`, a
    branch that is never taken) no longer makes DDP raise "Expected to have finished
    reduction in the prior iteration"; its weights silently stay at their initial values.

    The flag is often copied from an example, or added once to silence that error, and then
    left on.

    ## Example
    ```python
    model = DDP(model, device_ids=[local_rank], find_unused_parameters=True)
    ```

    ## Use instead
    ```python
    model = DDP(model, device_ids=[local_rank])
    ```
    Keep the flag only when some parameters really go unused in some steps (a mixture of
    experts, a conditional branch), and say so where it is set (`# noqa: TL807`). When the set
    of unused parameters is the same every step, `static_graph=True` is cheaper.

    ## Known limitations
    Whether a model really has unused parameters is only known by running it; `torchlint run`
    is where that can be measured. This rule reports the literal flag, as information.
    """

    code = "TL807"
    name = "ddp-find-unused-parameters"
    summary = "`DistributedDataParallel(find_unused_parameters=True)` traverses the autograd graph every step and hides unused layers"
    severity = Severity.INFO
    triggers = ("find_unused_parameters",)
    imports = ("torch",)
    cases = [
        Bad(
            """
            import torch
            from torch.nn.parallel import DistributedDataParallel as DDP

            model = DDP(model.cuda(), device_ids=[rank], find_unused_parameters=True)  # error
            """
        ),
        Bad(
            """
            import torch.nn as nn

            def wrap(model, rank):
                return nn.parallel.DistributedDataParallel(
                    model,
                    device_ids=[rank],
                    find_unused_parameters=True,  # error
                )
            """,
            note="reported on the keyword, in a multi-line call",
        ),
        Good(
            """
            from torch.nn.parallel import DistributedDataParallel as DDP

            model = DDP(model, device_ids=[rank], find_unused_parameters=cfg.find_unused_parameters)
            """,
            note="a configured value: decided per run",
        ),
        Good(
            """
            from torch.nn.parallel import DistributedDataParallel as DDP

            model = DDP(model, device_ids=[rank], find_unused_parameters=False)
            """
        ),
        Good(
            """
            def wrap(model, DDP):
                return DDP(model, find_unused_parameters=True)
            """,
            note="not torch's DistributedDataParallel (a parameter named DDP)",
        ),
        Good(
            files={
                "tests/test_unused.py": """
                    from torch.nn.parallel import DistributedDataParallel as DDP

                    def test_unused_branch(model):
                        ddp = DDP(model, find_unused_parameters=True)
                    """,
            },
            note="a test of the flag itself",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) not in DDP or is_test_path(self.ctx.path):
            return
        flag = keyword(node, "find_unused_parameters")
        if flag is None or not (type(flag.value) is cst.Name and flag.value.value == "True"):
            return
        self.report(
            flag,
            "`find_unused_parameters=True` makes DDP traverse the autograd graph after every forward pass, and "
            "a layer the loss never reaches then trains silently instead of raising; drop it unless some "
            "parameters really go unused (then `static_graph=True` may be cheaper)",
        )
