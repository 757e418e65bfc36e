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
    Flags `torch.utils.data.DataLoader(...)` calls that load every batch in the main process:
    those that do not pass `num_workers` (by keyword or positionally), and those that pass a
    literal `0`. Calls forwarding `*args` or `**kwargs` are not flagged: those may carry it;
    nor is `num_workers=n` with `n` a variable or an expression, whose value this rule does
    not know.

    ## Why is this bad?
    `num_workers` defaults to 0: every batch is loaded, decoded and collated in the main
    process, between training steps, so the accelerator idles while the CPU works. With
    `num_workers > 0` worker processes prepare the next batches while the model trains.

    Off by default: for small in-memory datasets, notebooks, tests and evaluation scripts the
    default is a deliberate, sensible choice, and worker processes have costs (start-up,
    memory, pickling the dataset). Turn it on for training code where input is the bottleneck.
    Once it is on, `num_workers=0` written out is reported too: it loads exactly as the
    default does, and a codebase that opted into this rule wants to see every loader that
    stalls the training process. Where synchronous loading is deliberate (debugging a
    dataset, a loader over tensors already in memory), say so with `# noqa: TL405`.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4)
    ```
    """

    code = "TL405"
    name = "dataloader-without-num-workers"
    summary = "`DataLoader` without `num_workers` (or with `num_workers=0`) loads every batch in the main process"
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
        Bad(
            """
            import torch
            from torch.utils.data import DataLoader

            train = DataLoader(ds, batch_size=64, num_workers=0)  # error
            again = torch.utils.data.DataLoader(ds, 64, True, None, None, 0)  # error
            """,
            note="`num_workers=0` written out, by keyword or positionally: the same main-process loading",
        ),
        Good(
            """
            from torch.utils.data import DataLoader

            def make(ds, workers, debug):
                a = DataLoader(ds, batch_size=8, num_workers=workers)
                b = DataLoader(ds, batch_size=8, num_workers=0 if debug else 4)
                return a, b
            """,
            note="a variable or an expression: its value is not known here",
        ),
        Good(
            """
            from torch.utils.data import DataLoader

            debug = DataLoader(ds, batch_size=8, num_workers=0)  # noqa: TL405 -- errors surface in this process
            """,
            note="deliberate synchronous loading, said with `# noqa`",
        ),
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
        if has_star_args(node):
            return
        workers = argument(node, "num_workers", NUM_WORKERS_POSITION)
        if workers is None:
            self.report(
                node,
                "`DataLoader` without `num_workers` loads and collates every batch in the main process, "
                "between training steps; set `num_workers` > 0 to overlap loading with training",
            )
        elif _is_literal_zero(workers.value):
            self.report(
                workers,
                "`num_workers=0` loads and collates every batch in the main process, between training "
                "steps; set it > 0 to overlap loading with training (`# noqa: TL405` where loading in "
                "this process is deliberate, e.g. to debug the dataset)",
            )


def _is_literal_zero(value: cst.BaseExpression) -> bool:
    # Only the literal: a variable (`num_workers=args.workers`) holds whatever the command
    # line or config says, and TorchFix's TOR401 stays quiet on it too.
    return type(value) is cst.Integer and value.evaluated_value == 0
