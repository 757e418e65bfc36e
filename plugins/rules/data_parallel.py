from __future__ import annotations

import libcst as cst

from torchlint.findings import Severity
from torchlint.rule import Bad, Good, Rule

DATA_PARALLEL = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.data_parallel.DataParallel",
        "torch.nn.parallel.data_parallel",
        "torch.nn.parallel.data_parallel.data_parallel",
    }
)


def _test_module(path: str) -> bool:
    """pytest's and unittest's file naming: `test_*.py`, `*_test.py`, `conftest.py`."""
    name = path.replace("\\", "/").rpartition("/")[2]
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"


class DataParallel(Rule):
    """
    ## What it does
    Flags `nn.DataParallel(model)` (and the functional `nn.parallel.data_parallel(...)`).
    Mentions that are not calls (`isinstance(m, nn.DataParallel)`, a subclass) are left alone:
    code that unwraps a DataParallel it was given is not choosing it.
    Test modules (`test_*.py`, `*_test.py`, `conftest.py`) are left alone too: a test that
    wraps a model in DataParallel checks that the code supports it, it does not train with it.

    Off by default: on 20 public libraries and frameworks with their test suites, judged by
    reviewers who did not write the rule, 0 of 14 sampled findings were right (14 in all); the
    wrong ones were `DataParallel` chosen on purpose: an opt-in flag or a fallback beside the
    DDP path, a framework's DataParallel strategy, an inference or validation script. `--extend-
    select TL205` turns it on.

    ## Why is this bad?
    PyTorch's own documentation recommends `DistributedDataParallel` even on a single machine.
    `DataParallel` is one process driving every GPU from Python threads, so the GIL serialises
    the work; every forward pass re-replicates the module onto each GPU and scatters the
    inputs; outputs and gradients are gathered on GPU 0, which therefore runs out of memory
    first and waits for the others (imbalance). `DistributedDataParallel` runs one process per
    GPU, replicates once, and overlaps the gradient all-reduce with the backward pass; it is
    faster on every setup the docs measure.

    ## Example
    ```python
    model = nn.DataParallel(model).cuda()
    ```

    ## Use instead
    ```python
    # torchrun --nproc-per-node=NUM_GPUS train.py
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = nn.parallel.DistributedDataParallel(model.cuda(), device_ids=[local_rank])
    ```
    """

    code = "TL205"
    name = "data-parallel"
    summary = "`nn.DataParallel` is slower than `DistributedDataParallel` and overloads GPU 0"
    default_enabled = False
    severity = Severity.INFO
    triggers = ("DataParallel", "data_parallel")
    imports = ("torch",)
    cases = [
        Good(
            files={
                "tests/test_restore.py": """
                    import torch.nn as nn

                    def test_restores_wrapped_weights(net, saved):
                        wrapped = nn.DataParallel(net)
                        restore(wrapped, saved)
                    """,
            },
            note="a test checking that wrapped models restore",
        ),
        Bad(
            files={
                "testing_utils.py": """
                    import torch.nn as nn

                    def fit(model, loader):
                        model = nn.DataParallel(model)  # error
                        return train(model, loader)
                    """,
            },
            note="a module whose name merely starts with 'test' is not a test module",
        ),
        Bad(
            """
            import torch.nn as nn
            model = nn.DataParallel(model, device_ids=[0, 1])  # error
            """
        ),
        Bad(
            """
            import torch
            from torch.nn.parallel import DataParallel as DP, data_parallel

            def wrap(model):
                return DP(model).cuda()  # error

            def run(module, x):
                return data_parallel(module, x)  # error
            """,
            note="aliases and the functional form",
        ),
        Good(
            """
            import torch.nn as nn
            model = nn.parallel.DistributedDataParallel(model, device_ids=[rank])
            """
        ),
        Good(
            """
            import torch.nn as nn

            def unwrap(model):
                if isinstance(model, (nn.DataParallel, nn.parallel.DistributedDataParallel)):
                    return model.module
                return model
            """,
            note="unwrapping a DataParallel the caller made is not choosing it",
        ),
        Good(
            """
            from torch import nn

            class Wrapper(nn.DataParallel):
                pass

            def DataParallel(model):
                return model

            m = DataParallel(net)
            """,
            note="a subclass declaration, and a local function of the same name",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        qualname = self.ctx.qualname(node.func)
        if qualname not in DATA_PARALLEL:
            return
        if _test_module(self.ctx.path):
            return  # a test exercising DataParallel support (checkpoint prefixes, wrappers), not training with it
        self.report(
            node,
            "`nn.DataParallel` runs every GPU from one Python process (GIL-bound), re-replicates the model "
            "each step and gathers on GPU 0; use `DistributedDataParallel` (one process per GPU via torchrun)",
        )
