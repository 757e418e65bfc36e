from __future__ import annotations

import libcst as cst

from torchlint.findings import Severity
from torchlint.rule import Bad, Good, Rule
from torchlint.static.names import dotted_name

from ._calls import argument
from ._distributed import DATALOADER, DISTRIBUTED_SAMPLER, TORCH_SAMPLERS, scope_nodes


class DataloaderShuffleWithSampler(Rule):
    """
    ## What it does
    Flags `DataLoader(..., shuffle=True, sampler=...)` where the sampler is a torch sampler:
    a `DistributedSampler(...)` (or `RandomSampler`, `SequentialSampler`, ...) written in the
    call, or a name that the same function (or module) binds to one, even on one arm only
    (`sampler = DistributedSampler(ds) if distributed else None`).

    `shuffle=` must be the literal `True`; `shuffle=(sampler is None)` is the correct idiom
    and is left alone, and so is a sampler name whose bindings are all something else.

    ## Why is this bad?
    `DataLoader` refuses the combination: it raises `ValueError: sampler option is mutually
    exclusive with shuffle` when it is built. With a sampler, the sampler decides the order;
    `DistributedSampler` shuffles by itself (its `shuffle=True` is the default). When the
    sampler is only set in distributed runs, the error appears only on the cluster, after a
    single-process run worked.

    ## Example
    ```python
    sampler = DistributedSampler(dataset) if distributed else None
    loader = DataLoader(dataset, batch_size=64, shuffle=True, sampler=sampler)
    ```

    ## Use instead
    ```python
    sampler = DistributedSampler(dataset) if distributed else None
    loader = DataLoader(dataset, batch_size=64, shuffle=(sampler is None), sampler=sampler)
    ```

    ## Known limitations
    A sampler passed through `**kwargs`, or built in another function, is not followed.
    """

    code = "TL802"
    name = "dataloader-shuffle-with-sampler"
    summary = "`DataLoader(shuffle=True, sampler=DistributedSampler(...))` raises: a sampler and shuffle exclude each other"
    severity = Severity.ERROR
    triggers = ("Sampler",)
    imports = ("torch",)
    cases = [
        Bad(
            """
            from torch.utils.data import DataLoader
            from torch.utils.data.distributed import DistributedSampler

            loader = DataLoader(dataset, batch_size=32, shuffle=True, sampler=DistributedSampler(dataset))  # error
            """
        ),
        Bad(
            """
            import torch

            def make_loader(dataset, distributed):
                sampler = torch.utils.data.distributed.DistributedSampler(dataset) if distributed else None
                return torch.utils.data.DataLoader(
                    dataset,
                    shuffle=True,  # error
                    sampler=sampler,
                )
            """,
            note="a sampler set on the distributed arm only: raises on the cluster",
        ),
        Bad(
            """
            from torch.utils.data import DataLoader, RandomSampler

            def make_loader(dataset):
                sampler = RandomSampler(dataset, replacement=True)
                return DataLoader(dataset, 64, True, sampler)  # error
            """,
            note="positional shuffle and sampler",
        ),
        Good(
            """
            from torch.utils.data import DataLoader, DistributedSampler

            def make_loader(dataset, distributed):
                sampler = DistributedSampler(dataset) if distributed else None
                return DataLoader(dataset, shuffle=(sampler is None), sampler=sampler)
            """,
            note="the idiom: shuffle only without a sampler",
        ),
        Good(
            """
            from torch.utils.data import DataLoader, DistributedSampler

            def make_loader(dataset, sampler=None):
                return DataLoader(dataset, shuffle=True, sampler=sampler)

            other = DistributedSampler(dataset)
            """,
            note="a parameter: the caller decides, and may pass None",
        ),
        Good(
            """
            from torch.utils.data import DataLoader, DistributedSampler

            train_sampler = DistributedSampler(train_set)
            loader = DataLoader(train_set, shuffle=False, sampler=train_sampler)
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) not in DATALOADER:
            return
        shuffle = argument(node, "shuffle", 2)
        if shuffle is None or not (type(shuffle.value) is cst.Name and shuffle.value.value == "True"):
            return
        sampler = argument(node, "sampler", 3)
        if sampler is None:
            return
        made = self._sampler_made(sampler.value)
        if made is None:
            return
        kind = made.rpartition(".")[2]
        distributed = made in DISTRIBUTED_SAMPLER
        self.report(
            shuffle,
            f"`shuffle=True` with a `sampler` ({kind}) makes DataLoader raise \"sampler option is mutually exclusive "
            f"with shuffle\"; " + ("DistributedSampler shuffles by itself: " if distributed else "")
            + "pass `shuffle=(sampler is None)` or drop `shuffle`",
        )

    def _sampler_made(self, value: cst.BaseExpression) -> str | None:
        """The torch sampler `value` is, or that some binding of the name `value` makes in
        this scope."""
        if type(value) is cst.Call:
            qualname = self.ctx.qualname(value.func)
            return qualname if qualname in TORCH_SAMPLERS else None
        name = dotted_name(value)
        if name is None:
            return None
        scope = self.ctx.enclosing_function() or self.ctx.module
        for node in scope_nodes(scope):
            if type(node) is not cst.Assign or not any(dotted_name(t.target) == name for t in node.targets):
                continue
            for option in _options(node.value):
                if type(option) is cst.Call:
                    qualname = self.ctx.qualname(option.func)
                    if qualname in TORCH_SAMPLERS:
                        return qualname
        return None


def _options(value: cst.BaseExpression):
    """The values an assignment may bind: both arms of `a if c else b`."""
    if type(value) is cst.IfExp:
        yield from _options(value.body)
        yield from _options(value.orelse)
    else:
        yield value
