from __future__ import annotations

import re

import libcst as cst

from torchlint.rule import Bad, Good, Rule
from torchlint.semantic.checkpoints import SAVE_FUNCTIONS, CheckpointNames
from torchlint.semantic.model import SemanticModel
from torchlint.static.names import dotted_name
from torchlint.static.walker import iter_nodes

from ._calls import keyword
from ._distributed import INIT_PROCESS_GROUP, RankReader, scopes
from torchlint.semantic.program_facts import is_test_path

#: What each kind of write is, for the message.
_WRITES = {
    **{name: "checkpoint" for name in SAVE_FUNCTIONS},
    "safetensors.torch.save_file": "checkpoint",
    "wandb.init": "run",
    "torch.utils.tensorboard.SummaryWriter": "log",
    "torch.utils.tensorboard.writer.SummaryWriter": "log",
    "tensorboardX.SummaryWriter": "log",
    "urllib.request.urlretrieve": "download",
    "torch.hub.download_url_to_file": "download",
}
_EFFECT = {
    "checkpoint": "every rank writes the same file at once (a torn or corrupted checkpoint, N times the I/O)",
    "run": "every rank starts its own run (N runs, N times the logging)",
    "log": "every rank writes its own event files into the same folder (duplicated, interleaved curves)",
    "download": "every rank downloads to the same place at once (a race that can leave a corrupt file)",
}
#: Project functions that set the process group up by their name (`init_distributed_mode(args)`).
_INIT_HELPER = re.compile(r"^_*(init|setup|initiali[sz]e)_?(distributed|dist|ddp)(_mode|_env)?$|^ddp_setup$", re.IGNORECASE)


class WriteOnEveryRank(Rule):
    """
    ## What it does
    In a file that initialises a process group (`dist.init_process_group(...)`, or a
    function of its own named like `init_distributed_mode` / `setup_ddp`), flags writes that
    every rank performs after the initialisation: `torch.save`, `safetensors.torch.save_file`,
    `wandb.init`, a TensorBoard `SummaryWriter`, a torchvision dataset built with
    `download=True`, `urlretrieve` / `torch.hub.download_url_to_file`.

    "Every rank" means: in the function that initialises the group, after that call, or in a
    function of this file called from there, with no rank-dependent guard on the way (`if
    rank == 0:`, `if is_main_process():`, an earlier `if rank != 0: return`, a
    `@rank_zero_only` decorator). A write whose path, or whose path variable, names the rank
    (`f"shard_{rank}.pt"`) is per-rank on purpose and left alone.

    ## Why is this bad?
    All ranks run the same script. An unguarded `torch.save(model.state_dict(), "ckpt.pt")`
    makes N processes write the same file at the same moment: at best N times the I/O, at
    worst a truncated checkpoint that fails to load when the job is resumed. `wandb.init` on
    every rank creates N runs; a `SummaryWriter` on every rank writes N event files into one
    folder; N concurrent downloads of a dataset race on the same archive.

    ## Example
    ```python
    dist.init_process_group("nccl")
    ...
    for epoch in range(epochs):
        train_one_epoch(model, loader)
        torch.save(model.module.state_dict(), "checkpoint.pt")
    ```

    ## Use instead
    ```python
    dist.init_process_group("nccl")
    ...
    for epoch in range(epochs):
        train_one_epoch(model, loader)
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), "checkpoint.pt")
    ```

    ## Known limitations
    Off by default: whether a write is meant for every rank is a judgement the code does not
    always show, and the guard is often written in a form a linter cannot read. On 23 public
    DDP code bases it reported three writes whose guards it had misread (`if self.gpu_id ==
    0:`, `SummaryWriter() if rank == 0 else None`); those forms are understood now, but
    others will exist. Each rank may write to its own folder that was made rank-specific earlier
    (`args.output_dir = f"{out}/rank{rank}"`), a checkpoint may hold a per-rank shard under a
    name we cannot tell from a global one, and a function of another file that initialises the
    group under a name not listed above is not recognised. Only this file's functions are
    followed.
    """

    code = "TL804"
    name = "write-on-every-rank"
    summary = "`torch.save`, `wandb.init`, a log writer or a download that every rank runs: N writers race on one file"
    default_enabled = False
    triggers = ("init_process_group", "init_dist", "setup_dist", "setup_ddp", "ddp_setup", "initialize_dist", "initialise_dist")
    imports = ("torch",)
    analyses = (SemanticModel,)
    cases = [
        Bad(
            """
            import torch
            import torch.distributed as dist

            def main(model, loader, epochs):
                dist.init_process_group("nccl")
                for epoch in range(epochs):
                    train(model, loader)
                    torch.save(model.module.state_dict(), "checkpoint.pt")  # error
            """
        ),
        Bad(
            """
            import torch
            import torch.distributed as dist
            import wandb
            from torch.utils.tensorboard import SummaryWriter

            def setup(rank, world_size):
                dist.init_process_group("gloo", rank=rank, world_size=world_size)

            def save(model, path):
                torch.save(model.state_dict(), path)  # error

            def worker(rank, world_size, model):
                setup(rank, world_size)
                wandb.init(project="ddp")  # error
                writer = SummaryWriter("runs")  # error
                save(model, "last.pt")
            """,
            note="through this file's set-up function, and in a helper called on every rank",
        ),
        Bad(
            """
            import torchvision
            import torch.distributed as dist
            from utils import init_distributed_mode

            def main(args):
                init_distributed_mode(args)
                train_set = torchvision.datasets.CIFAR10(args.data, train=True, download=True)  # error
            """,
            note="a project function that sets the group up, and a dataset download",
        ),
        Good(
            """
            import torch
            import torch.distributed as dist

            def save(model, path):
                torch.save(model.state_dict(), path)

            def main(model, loader, epochs, rank):
                dist.init_process_group("nccl")
                for epoch in range(epochs):
                    train(model, loader)
                    if rank == 0:
                        save(model, "checkpoint.pt")
                        torch.save(model.module.state_dict(), "last.pt")
            """,
            note="guarded where it runs",
        ),
        Good(
            """
            import torch
            import torch.distributed as dist

            def main(model, rank):
                dist.init_process_group("nccl")
                torch.save(model.state_dict(), f"shard_{rank}.pt")
                path = f"states/rank{dist.get_rank()}.pt"
                torch.save(model.state_dict(), path)
            """,
            note="a file per rank, on purpose",
        ),
        Good(
            """
            import torch
            import torch.distributed as dist

            def main(model, args):
                dist.init_process_group("nccl")
                if not is_main_process():
                    return
                torch.save(model.state_dict(), "final.pt")
            """,
            note="the other ranks left before",
        ),
        Good(
            """
            import torch.distributed as dist
            from torch.utils.tensorboard import SummaryWriter

            def main(args):
                dist.init_process_group("nccl")
                writer = SummaryWriter() if args.rank == 0 else None
            """,
            note="a conditional expression guards it",
        ),
        Good(
            """
            import torch

            def main(model):
                torch.save(model.state_dict(), "model.pt")
            """,
            note="no process group: one process",
        ),
        Good(
            """
            import torch
            import torch.distributed as dist

            def export(model):
                torch.save(model, "model.pt")

            def main(model):
                export(model)
                dist.init_process_group("nccl")
            """,
            note="before the process group exists",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.model: SemanticModel = ctx.analysis(SemanticModel)
        self.names = CheckpointNames(ctx)
        #: function node (or the module) -> position (calls seen) of its first set-up call
        self._inits: dict[int, int] = {}
        self._writes: list[tuple[cst.Call, str, cst.CSTNode, int]] = []
        #: function node (or module) -> [(call order, callee value, guarded)] of its calls
        self._calls: dict[int, list[tuple[int, object, bool]]] = {}
        self._seen = 0
        self._ranks: RankReader | None = None

    @property
    def ranks(self) -> RankReader:
        if self._ranks is None:
            self._ranks = RankReader(self.ctx.module)
        return self._ranks

    def visit_Call(self, node: cst.Call) -> None:
        self._seen += 1
        scope = _scope(self.ctx.ancestors) or self.ctx.module
        qualname = self.names.qualname(node.func)
        if qualname in INIT_PROCESS_GROUP or _set_up_by_name(node):
            self._inits.setdefault(id(scope), self._seen)
        kind = _write_kind(qualname, node)
        guarded = self.ranks.guarded(self.ctx.ancestors, node)
        if kind is not None:
            if not guarded and not self._per_rank(node):
                self._writes.append((node, kind, scope, self._seen))
            return
        if type(node.func) in (cst.Name, cst.Attribute):
            self._calls.setdefault(id(scope), []).append((self._seen, self.model.value(node.func), guarded))

    def finish(self) -> None:
        if not self._inits or is_test_path(self.ctx.path):
            return
        inits = self._set_up_through_helpers()
        # Every function that runs on every rank after the set-up: (function id -> the order
        # from which on it does: the set-up call in the function that makes it, 0 in a callee).
        after: dict[int, int] = dict(inits)
        pending = list(after)
        while pending:
            scope = pending.pop()
            for order, callee, guarded in self._calls.get(scope, ()):
                if guarded or order < after[scope]:
                    continue
                for info in self.model.functions_called(callee):
                    if id(info.node) not in after:
                        after[id(info.node)] = 0
                        pending.append(id(info.node))
        for node, kind, scope, order in self._writes:
            start = after.get(id(scope))
            if start is None or order < start:
                continue
            what = dotted_name(node.func) or "this call"
            self.report(
                node,
                f"`{what}` runs on every rank of this distributed program: {_EFFECT[kind]}; "
                "guard it with `if rank == 0:` (or `dist.get_rank() == 0`)",
            )

    def _set_up_through_helpers(self) -> dict[int, int]:
        """Scopes that set the process group up, with the order of their set-up call: those
        that call `init_process_group` themselves, and those that call a function of this
        file that does (`setup(rank, world_size)`), however deep."""
        inits = dict(self._inits)
        changed = True
        while changed:
            changed = False
            for scope, calls in self._calls.items():
                for order, callee, _ in calls:
                    if order >= inits.get(scope, 1 << 62):
                        continue
                    if any(id(info.node) in inits for info in self.model.functions_called(callee)):
                        inits[scope] = order
                        changed = True
        return inits

    def _per_rank(self, call: cst.Call) -> bool:
        """The call's arguments (or the names they are built from) name the rank."""
        bindings = None
        for arg in call.args:
            for child in iter_nodes(arg.value):
                if self.ranks.is_rank(child) or self.ranks.is_flag(child):
                    return True
                if type(child) is cst.Name:
                    if bindings is None:
                        bindings = _assigned_values(self.ctx.enclosing_function() or self.ctx.module)
                    for value in bindings.get(child.value, ()):
                        if any(self.ranks.is_rank(inner) for inner in iter_nodes(value)):
                            return True
        return False


def _scope(ancestors) -> cst.CSTNode | None:
    return next((a for a in reversed(ancestors) if type(a) in scopes()), None)


def _set_up_by_name(call: cst.Call) -> bool:
    name = dotted_name(call.func)
    return name is not None and _INIT_HELPER.match(name.rpartition(".")[2]) is not None


def _write_kind(qualname: str | None, call: cst.Call) -> str | None:
    if qualname is None:
        return None
    if qualname in _WRITES:
        return _WRITES[qualname]
    if qualname.startswith("torchvision.datasets."):
        flag = keyword(call, "download")
        if flag is not None and type(flag.value) is cst.Name and flag.value.value == "True":
            return "download"
    return None


def _assigned_values(scope: cst.CSTNode) -> dict[str, list[cst.BaseExpression]]:
    root = scope.body if type(scope) is cst.FunctionDef else scope
    found: dict[str, list[cst.BaseExpression]] = {}
    for node in iter_nodes(root, skip=scopes()):
        if type(node) is cst.Assign:
            for target in node.targets:
                if type(target.target) is cst.Name:
                    found.setdefault(target.target.value, []).append(node.value)
    return found
