from __future__ import annotations

import libcst as cst

from torchlint.rule import Bad, Good, Rule

from ._calls import argument, has_star_args

DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
#: `DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, ...)`.
NUM_WORKERS_POSITION = 5


class DataLoaderWithoutNumWorkers(Rule):
    """
    ## What it does
    Flags `torch.utils.data.DataLoader(...)` calls that do not pass `num_workers`, by keyword
    or positionally. Calls forwarding `*args` or `**kwargs` are not flagged: those may carry it.

    ## Why is this bad?
    `num_workers` defaults to 0: every batch is loaded, decoded and collated in the main
    process, between training steps, so the accelerator idles while the CPU works. With
    `num_workers > 0` worker processes prepare the next batches while the model trains.

    Off by default: for small in-memory datasets, notebooks, tests and evaluation scripts the
    default is a deliberate, sensible choice, and worker processes have costs (start-up,
    memory, pickling the dataset). Turn it on for training code where input is the bottleneck.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4)
    ```
    (`num_workers=0` written out says the main-process loading is intended.)
    """

    code = "TL405"
    name = "dataloader-without-num-workers"
    summary = "`DataLoader` without `num_workers` loads every batch in the main process"
    triggers = ("DataLoader",)
    default_enabled = False
    cases = [
        Bad(
            """
            import torch
            from torch.utils.data import DataLoader

            train = DataLoader(ds, batch_size=64, shuffle=True)  # error
            test = torch.utils.data.DataLoader(  # error
                ds,
                batch_size=256,
            )
            """
        ),
        Bad(
            """
            import torch.utils.data as data

            def make(ds, **kwargs):
                return data.DataLoader(ds, batch_size=kwargs["bs"])  # error
            """,
            note="`**kwargs` in scope but not passed",
        ),
        Good("from torch.utils.data import DataLoader\nl = DataLoader(ds, batch_size=8, num_workers=0)"),
        Good(
            "from torch.utils.data import DataLoader\nl = DataLoader(ds, 8, True, None, None, 4)",
            note="num_workers passed positionally",
        ),
        Good(
            """
            from torch.utils.data import DataLoader

            def make(ds, **kwargs):
                return DataLoader(ds, batch_size=32, **kwargs)

            def make2(*args):
                return DataLoader(*args)
            """,
            note="`**kwargs` / `*args` may carry num_workers (TorchFix's TOR401 flags these)",
        ),
        Good(
            """
            from my_project.data import DataLoader
            from torch_geometric.loader import DataLoader as GeoLoader

            a = DataLoader(ds)
            b = GeoLoader(ds)
            """,
            note="other libraries' DataLoaders",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) not in DATALOADERS:
            return
        if has_star_args(node) or argument(node, "num_workers", NUM_WORKERS_POSITION) is not None:
            return
        self.report(
            node,
            "`DataLoader` without `num_workers` loads and collates every batch in the main process; "
            "set `num_workers` (> 0 to overlap loading with training, or 0 explicitly)",
        )
