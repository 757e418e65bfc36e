from __future__ import annotations

import re

import libcst as cst

from torchlint.rule import Bad, Good, Rule
from torchlint.static.names import dotted_name
from torchlint.static.walker import iter_nodes

from ._calls import argument, has_star_args, keyword
from ._distributed import DATALOADER, DDP, scope_nodes

_INIT = frozenset({"torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group"})
#: Code that gives each rank its own part of the data another way, or a framework that
#: injects a DistributedSampler into the loaders it is handed.
_FRAMEWORK = re.compile(r"setup_dataloaders|\bprepare\(|Trainer\(")
#: A dataset made per rank: `dataset.shard(world_size, rank)`, `split_dataset_by_node`, webdataset's `split_by_node`.
_SHARDED_DATA = re.compile(r"shard|split_\w*by_node|rank|world_size|num_replicas", re.IGNORECASE)


class DataloaderWithoutDistributedSampler(Rule):
    """
    ## What it does
    Flags a training `DataLoader` (`shuffle=True`, or assigned to a name with `train` in it)
    built without `sampler=` or `batch_sampler=` in a function that wraps a model in
    `DistributedDataParallel` or calls `init_process_group` (or in a module that calls
    `init_process_group` at its top level).

    Left alone: loaders given a sampler or `**kwargs`, evaluation loaders (every rank
    evaluating everything is slow, not wrong), a dataset made per rank (its expression or
    assignment mentions the rank, the world size, `shard` or `split_dataset_by_node`), and a
    function that hands its loaders to a framework that injects the sampler
    (`accelerator.prepare(...)`, `fabric.setup_dataloaders(...)`, a `Trainer(...)`).

    ## Why is this bad?
    Without a `DistributedSampler` every rank iterates the whole dataset: each epoch does
    N times the intended work, the ranks' gradients come from overlapping (with
    `shuffle=False`, identical) batches, and the effective batch size and learning-rate
    scaling are not what the N-GPU configuration says. Nothing fails; training is just
    slower and different from the plan.

    ## Example
    ```python
    dist.init_process_group("nccl")
    model = DistributedDataParallel(model.cuda(), device_ids=[local_rank])
    loader = DataLoader(dataset, batch_size=64, shuffle=True)
    ```

    ## Use instead
    ```python
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=64, sampler=sampler)
    ```
    """

    code = "TL808"
    name = "dataloader-without-distributed-sampler"
    summary = "a training `DataLoader` without a `DistributedSampler` under DDP: every rank iterates the whole dataset"
    triggers = ("DataLoader",)
    imports = ("torch",)
    cases = [
        Bad(
            """
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel
            from torch.utils.data import DataLoader

            def train(dataset, model, local_rank):
                dist.init_process_group("nccl")
                model = DistributedDataParallel(model.cuda(local_rank), device_ids=[local_rank])
                loader = DataLoader(dataset, batch_size=32, shuffle=True)  # error
                train_loader = DataLoader(dataset, batch_size=32)  # error
                val_loader = DataLoader(dataset, batch_size=32)
            """,
            note="an evaluation loader is left alone",
        ),
        Bad(
            """
            import torch.distributed as dist
            from torch.utils.data import DataLoader

            dist.init_process_group("nccl")

            def train(dataset):
                return DataLoader(dataset, batch_size=32, shuffle=True)  # error
            """,
            note="a process group made at module level",
        ),
        Good(
            """
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel
            from torch.utils.data import DataLoader, DistributedSampler

            def train(dataset, model, batches, **kwargs):
                dist.init_process_group("nccl")
                model = DistributedDataParallel(model)
                sampler = DistributedSampler(dataset)
                a = DataLoader(dataset, sampler=sampler)
                b = DataLoader(dataset, batch_sampler=batches)
                c = DataLoader(dataset, shuffle=True, **kwargs)

            def single_process(dataset):
                return DataLoader(dataset, batch_size=32, shuffle=True)
            """,
            note="samplers, kwargs, and another function without DDP",
        ),
        Good(
            """
            import torch.distributed as dist
            from torch.utils.data import DataLoader

            def train(dataset, model, accelerator):
                dist.init_process_group("nccl")
                part = dataset.shard(num_shards=dist.get_world_size(), index=dist.get_rank())
                loader = DataLoader(part, batch_size=32, shuffle=True)

            def train2(dataset, model, accelerator):
                dist.init_process_group("nccl")
                loader = DataLoader(dataset, batch_size=32, shuffle=True)
                model, loader = accelerator.prepare(model, loader)
            """,
            note="data sharded by rank; a framework that injects the sampler",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._module_inits: bool | None = None
        self._scopes: dict[int, bool] = {}

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) not in DATALOADER or has_star_args(node):
            return
        # DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...)
        if argument(node, "sampler", 3) is not None or argument(node, "batch_sampler", 4) is not None:
            return
        if not self._training_loader(node):
            return
        function = self.ctx.enclosing_function()
        if not self._distributed(function) or self._sharded_dataset(node, function):
            return
        self.report(
            node,
            "this training `DataLoader` has no `DistributedSampler` in a DDP program: every rank iterates the whole "
            "dataset; pass `sampler=DistributedSampler(dataset)` (and call `sampler.set_epoch(epoch)`)",
        )

    def _training_loader(self, node: cst.Call) -> bool:
        shuffle = keyword(node, "shuffle")
        if shuffle is not None and type(shuffle.value) is cst.Name and shuffle.value.value == "True":
            return True
        for ancestor in reversed(self.ctx.ancestors[-3:]):
            if type(ancestor) is cst.Assign:
                names = [dotted_name(t.target) or "" for t in ancestor.targets]
                return any("train" in name.lower() for name in names)
        return False

    def _sharded_dataset(self, node: cst.Call, function: cst.FunctionDef | None) -> bool:
        """The dataset handed to the loader is made per rank: its expression, or an
        assignment of its name in this scope, mentions the rank, the world size or sharding."""
        dataset = argument(node, "dataset", 0)
        if dataset is None:
            return False
        if _SHARDED_DATA.search(self.ctx.module.code_for_node(dataset.value)):
            return True
        name = dotted_name(dataset.value)
        scope = function if function is not None else self.ctx.module
        for statement in scope_nodes(scope):
            if type(statement) is cst.Assign and any(name in _names(t.target) for t in statement.targets):
                if _SHARDED_DATA.search(self.ctx.module.code_for_node(statement.value)):
                    return True
            elif type(statement) is cst.Call and type(statement.func) is cst.Attribute:
                if dotted_name(statement.func.value) == name and _SHARDED_DATA.search(statement.func.attr.value):
                    return True
        return False

    def _distributed(self, function: cst.FunctionDef | None) -> bool:
        """The function (or the module's top level) sets up DDP, and does not shard the
        data itself or hand the loader to a framework."""
        scope = function if function is not None else self.ctx.module
        key = id(scope)
        if key not in self._scopes:
            text = self.ctx.module.code_for_node(scope)
            ddp = any(
                type(n) is cst.Call and self.ctx.qualname(n.func) in (DDP | _INIT) for n in scope_nodes(scope)
            )
            self._scopes[key] = ddp and _FRAMEWORK.search(text) is None
        if self._scopes[key]:
            return True
        if function is None:
            return False
        if self._module_inits is None:
            self._module_inits = any(
                type(n) is cst.Call and self.ctx.qualname(n.func) in _INIT for n in scope_nodes(self.ctx.module)
            )
        return self._module_inits and _FRAMEWORK.search(self.ctx.module.code_for_node(function)) is None


def _names(target: cst.BaseExpression) -> set[str | None]:
    return {dotted_name(n) for n in iter_nodes(target) if type(n) in (cst.Name, cst.Attribute)}
