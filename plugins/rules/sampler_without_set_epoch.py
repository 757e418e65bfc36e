from __future__ import annotations

import re

import libcst as cst

from torchlint.rule import Bad, Good, Rule
from torchlint.semantic.model import SemanticModel
from torchlint.static.names import dotted_name
from torchlint.static.walker import iter_nodes

from ._calls import argument
from ._distributed import (
    DATALOADER,
    DISTRIBUTED_SAMPLER,
    assigned_name,
    mentions_name,
    method_calls,
    module_file,
    parent_map,
    scope_nodes,
    scopes,
)

BATCH_SAMPLER = frozenset({"torch.utils.data.BatchSampler", "torch.utils.data.sampler.BatchSampler"})
#: Calls that iterate a loader: they cannot set its sampler's epoch.
_ITERATING = frozenset({"iter", "enumerate", "zip", "tqdm", "next", "list", "islice", "cycle", "chain"})
#: Calls that only look at a loader: they neither iterate it nor set its epoch.
_LOOKING = frozenset({"len", "print", "isinstance", "hasattr", "getattr", "type", "str", "repr", "format"})
#: Evaluation data: its order does not matter, so a fixed order is no bug.
_EVALUATION = re.compile(r"(^|_)(val|valid|validation|test|testing|eval|evaluation|dev|holdout)(_|\d|$)", re.IGNORECASE)


class SamplerWithoutSetEpoch(Rule):
    """
    ## What it does
    Flags an epoch loop over a `DistributedSampler`'s data that never calls `set_epoch`: a
    loop that iterates the sampler's `DataLoader` (directly, through `iter()`/`enumerate()`/
    `tqdm()`, or by passing it to a function of this project) on every pass,
    when nothing in the loop, or in the functions of this file it calls, calls
    `.set_epoch(...)` (`sampler.set_epoch(epoch)`, `loader.sampler.set_epoch(epoch)`). A
    function of another file that the loop hands the data to (`train_one_epoch(model,
    loader)`) counts as setting it when its file mentions `set_epoch` anywhere.

    The sampler, and the loaders built with `sampler=` it, are followed by name in one
    function (or at module level). Left alone: a sampler built with `shuffle=False`, one built
    afresh inside the loop, evaluation data (`val_sampler`, `test_loader`: its order does not
    matter), and a loop that hands the loader or sampler to a function defined elsewhere
    unless that function is in a file of the project that never mentions `set_epoch`.

    ## Why is this bad?
    `DistributedSampler` shuffles with a generator seeded by `seed + epoch`, and `epoch` only
    changes when you call `set_epoch`. Without it every epoch visits the data in the same
    order on every rank: the shuffling the training relies on is gone, which costs accuracy
    and is invisible in the logs (pytorch/pytorch#31771, #31232). `DataLoader(shuffle=True)`
    reshuffles by itself, so the bug appears when a script moves to DDP.

    ## Example
    ```python
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=64, sampler=sampler)
    for epoch in range(epochs):
        for x, y in loader:
            train_step(x, y)
    ```

    ## Use instead
    ```python
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=64, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            train_step(x, y)
    ```

    ## Known limitations
    A sampler or loader kept on `self` and iterated in another method, or returned by a
    helper, is not followed; neither is a subclass of `DistributedSampler`.
    """

    code = "TL801"
    name = "sampler-without-set-epoch"
    summary = "an epoch loop over a `DistributedSampler` without `set_epoch`: every epoch sees the same order"
    triggers = ("DistributedSampler",)
    imports = ("torch",)
    project_tokens = ("set_epoch", "def")
    analyses = (SemanticModel,)
    cases = [
        Bad(
            """
            from torch.utils.data import DataLoader
            from torch.utils.data.distributed import DistributedSampler

            def main(dataset, model, epochs):
                sampler = DistributedSampler(dataset)
                loader = DataLoader(dataset, batch_size=64, sampler=sampler)
                for epoch in range(epochs):  # error
                    for x, y in loader:
                        model(x, y).backward()
            """
        ),
        Bad(
            """
            import torch

            def train(loader, model):
                for batch in loader:
                    model(batch).backward()

            def main(args, dataset, model):
                train_loader = torch.utils.data.DataLoader(
                    dataset, sampler=torch.utils.data.distributed.DistributedSampler(dataset)
                )
                for epoch in range(args.start_epoch, args.epochs):  # error
                    train(train_loader, model)
            """,
            note="the loop hands the loader to a function of this file that iterates it",
        ),
        Bad(
            """
            from torch.utils.data import DataLoader, DistributedSampler

            sampler = DistributedSampler(dataset, shuffle=True)
            loader = DataLoader(dataset, sampler=sampler)
            step = 0
            while step < max_steps:  # error
                for batch in loader:
                    step += 1
            """,
            note="module level, a while loop",
        ),
        Bad(
            """
            import torch
            from torch.utils.data import DataLoader

            def main(args, dataset, model):
                sampler_train = torch.utils.data.DistributedSampler(dataset)
                batch_sampler = torch.utils.data.BatchSampler(sampler_train, args.batch_size, drop_last=True)
                data_loader = DataLoader(dataset, batch_sampler=batch_sampler, num_workers=args.workers)
                for epoch in range(args.epochs):  # error
                    for samples, targets in data_loader:
                        model(samples, targets).backward()
            """,
            note="through a BatchSampler",
        ),
        Good(
            """
            from torch.utils.data import DataLoader
            from torch.utils.data.distributed import DistributedSampler

            def main(dataset, model, epochs):
                sampler = DistributedSampler(dataset)
                loader = DataLoader(dataset, batch_size=64, sampler=sampler)
                for epoch in range(epochs):
                    sampler.set_epoch(epoch)
                    for x, y in loader:
                        model(x, y).backward()
            """
        ),
        Good(
            """
            from torch.utils.data import DataLoader
            from torch.utils.data.distributed import DistributedSampler

            def run_epoch(loader, model, epoch):
                loader.sampler.set_epoch(epoch)
                for x in loader:
                    model(x).backward()

            def main(dataset, model, epochs):
                loader = DataLoader(dataset, sampler=DistributedSampler(dataset))
                for epoch in range(epochs):
                    run_epoch(loader, model, epoch)
            """,
            note="set through loader.sampler, in the helper the loop calls",
        ),
        Good(
            """
            from torch.utils.data import DataLoader
            from torch.utils.data.distributed import DistributedSampler
            from engine import train_one_epoch

            def main(dataset, model, epochs):
                loader = DataLoader(dataset, sampler=DistributedSampler(dataset))
                for epoch in range(epochs):
                    train_one_epoch(model, loader, epoch)
            """,
            note="a helper from a file we do not check may set the epoch",
        ),
        Bad(
            files={
                "main.py": """
                    from torch.utils.data import DataLoader
                    from torch.utils.data.distributed import DistributedSampler
                    from engine import train_one_epoch

                    def main(dataset, model, epochs):
                        loader = DataLoader(dataset, sampler=DistributedSampler(dataset))
                        for epoch in range(epochs):  # error
                            train_one_epoch(model, loader, epoch)
                    """,
                "engine.py": """
                    def train_one_epoch(model, loader, epoch):
                        for x in loader:
                            model(x).backward()
                    """,
            },
            note="the project's helper iterates the loader and sets no epoch",
        ),
        Good(
            files={
                "main.py": """
                    from torch.utils.data import DataLoader
                    from torch.utils.data.distributed import DistributedSampler
                    from . import engine

                    def main(dataset, model, epochs):
                        loader = DataLoader(dataset, sampler=DistributedSampler(dataset))
                        for epoch in range(epochs):
                            engine.train_one_epoch(model, loader, epoch)
                    """,
                "engine.py": """
                    def train_one_epoch(model, loader, epoch):
                        loader.sampler.set_epoch(epoch)
                        for x in loader:
                            model(x).backward()
                    """,
                "__init__.py": "",
            },
            note="the project's helper sets the epoch",
        ),
        Good(
            """
            from torch.utils.data import DataLoader
            from torch.utils.data.distributed import DistributedSampler

            def main(dataset, val_set, model, epochs):
                val_loader = DataLoader(val_set, sampler=DistributedSampler(val_set))
                fixed = DataLoader(dataset, sampler=DistributedSampler(dataset, shuffle=False))
                for epoch in range(epochs):
                    for x in val_loader:
                        model(x)
                    for x in fixed:
                        model(x).backward()
            """,
            note="evaluation data, and a sampler that does not shuffle",
        ),
        Good(
            """
            from torch.utils.data import DataLoader
            from torch.utils.data.distributed import DistributedSampler

            def main(dataset, model):
                loader = DataLoader(dataset, sampler=DistributedSampler(dataset))
                for x in loader:
                    model(x).backward()
            """,
            note="one pass: no epoch loop",
        ),
        Good(
            """
            from torch.utils.data import DataLoader
            from torch.utils.data.distributed import DistributedSampler

            def main(dataset, model, epochs):
                loader = DataLoader(dataset, sampler=DistributedSampler(dataset))
                for epoch in range(epochs):
                    print(f"epoch {epoch}: {len(loader)} batches")
                for x in loader:
                    model(x).backward()
            """,
            note="the epoch loop only measures the loader",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.model: SemanticModel = ctx.analysis(SemanticModel)
        self._samplers: list[tuple[cst.Call, cst.CSTNode]] = []
        #: id(call) -> what the call runs (asked while visiting: the model answers for a place)
        self._callees: dict[int, object] = {}

    def visit_Call(self, node: cst.Call) -> None:
        if type(node.func) in (cst.Name, cst.Attribute):
            self._callees[id(node)] = self.model.value(node.func)
        if self.ctx.qualname(node.func) not in DISTRIBUTED_SAMPLER:
            return
        shuffle = argument(node, "shuffle", 3)
        if shuffle is not None and type(shuffle.value) is cst.Name and shuffle.value.value == "False":
            return
        self._samplers.append((node, self.ctx.enclosing_function() or self.ctx.module))

    def finish(self) -> None:
        parents_by_scope: dict[int, dict] = {}
        reported: set[int] = set()
        for sampler, scope in self._samplers:
            parents = parents_by_scope.get(id(scope))
            if parents is None:
                parents = parents_by_scope[id(scope)] = parent_map(scope)
            sampler_name, names = self._data_names(sampler, scope, parents)
            if not names or any(_EVALUATION.search(name.rpartition(".")[2]) for name in names):
                continue
            for loop, helpers in self._epoch_loops(scope, names, sampler):
                if id(loop) in reported:
                    continue
                reported.add(id(loop))
                sampler_text = sampler_name or f"{sorted(names)[0]}.sampler"
                where = "" if not helpers else ", nor do the functions of this project it hands the data to"
                self.report(
                    loop,
                    f"this loop goes over the data of a DistributedSampler every pass but never calls "
                    f"`{sampler_text}.set_epoch(epoch)`{where}: the sampler shuffles with the same seed each time, so "
                    "every epoch sees the same order",
                    end_node=loop.iter if type(loop) is cst.For else loop.test,
                )
                if helpers:
                    line, column = self.ctx.position(loop)[:2]
                    self.add_fact("helpers", {"line": line, "column": column, "modules": sorted(helpers)})

    @classmethod
    def keep_in_project(cls, project, finding) -> bool:
        """A loop that hands the data to functions of other files stands only when each of
        those files is checked and none of them mentions `set_epoch`."""
        facts = project.facts.get(finding.path, {}).get(cls.code, {}).get("helpers", [])
        at = (finding.location.line, finding.location.column)
        fact = next((f for f in facts if (f["line"], f["column"]) == at), None)
        if fact is None:
            return True
        setting = project.files_mentioning("set_epoch", near=finding.path)
        # Every checked file that defines a function says `def`: the files a helper can be in
        # (the engine keeps module names only for files that recorded facts).
        files = project.files_mentioning("def", near=finding.path)
        for module, level in fact["modules"]:
            path = module_file(finding.path, module, level, files)
            if path is None or path in setting:
                return False  # code we do not check, or code that may set the epoch
        return True

    # -- which names carry the sampler ----------------------------------------------------------
    def _data_names(self, sampler: cst.Call, scope: cst.CSTNode, parents: dict) -> tuple[str | None, set[str]]:
        """The sampler's name, and every name that carries it in its scope: that one, the
        `BatchSampler`s built on it and the loaders built with either."""
        names: set[str] = set()
        sampler_name = assigned_name(sampler, parents)
        if sampler_name is not None:
            names.add(sampler_name)
        samplers = {sampler_name} if sampler_name is not None else set()
        for node in scope_nodes(scope):
            if type(node) is not cst.Call:
                continue
            qualname = self.ctx.qualname(node.func)
            if qualname in DATALOADER:
                given = argument(node, "sampler", 3) or argument(node, "batch_sampler", 4)
            elif qualname in BATCH_SAMPLER:
                given = argument(node, "sampler", 0)
            else:
                continue
            if given is None or not (given.value is sampler or dotted_name(given.value) in samplers):
                continue
            carrier = assigned_name(node, parents)
            if carrier is not None:
                names.add(carrier)
                if qualname in BATCH_SAMPLER:
                    samplers.add(carrier)  # `DataLoader(batch_sampler=...)` comes later in the scope
        return sampler_name, names

    # -- which loops go over the data every pass -----------------------------------------------------
    def _epoch_loops(self, scope: cst.CSTNode, names: set[str], sampler: cst.Call):
        """The outermost loops of the scope that use the data on every pass without calling
        `set_epoch`, each with the modules (name, level) of the functions of other files it
        hands the data to. A loop that hands it to anything else (a method, a library) is
        left alone: that code may set the epoch."""
        pending: list[cst.CSTNode] = [scope.body if type(scope) is cst.FunctionDef else scope]
        while pending:
            node = pending.pop()
            for child in _direct_statements(node):
                if type(child) in (cst.For, cst.While) and self._uses_every_pass(child, names):
                    if not _contains(child, sampler) and not self._sets_epoch(child):
                        helpers = self._helpers_elsewhere(child, names)
                        if helpers is not None:
                            yield child, helpers
                    continue  # outermost only: an inner loop is judged with this one
                pending.append(child)

    def _uses_every_pass(self, loop: cst.CSTNode, names: set[str]) -> bool:
        if type(loop) is cst.For and any(mentions_name(loop.iter, name) for name in names):
            return False  # this loop is the pass over the data itself
        for node in iter_nodes(loop.body, skip=scopes()):
            if type(node) is cst.For and any(mentions_name(node.iter, name) for name in names):
                return True
            if type(node) is cst.Call and self._passes(node, names) and _callee_name(node) not in _LOOKING:
                if _callee_name(node) in _ITERATING or self.model.functions_called(self._callees.get(id(node))):
                    return True
                if self._imported_module(node) is not None:
                    return True  # `train_one_epoch(model, loader)` from the project's engine.py
        return False

    def _helpers_elsewhere(self, loop: cst.CSTNode, names: set[str]) -> set[tuple[str, int]] | None:
        """The modules of the imported functions the loop hands the data to; None when it
        hands it to something that is neither such a function nor one of this file."""
        modules: set[tuple[str, int]] = set()
        for node in iter_nodes(loop.body, skip=scopes()):
            if type(node) is not cst.Call or not self._passes(node, names) or _callee_name(node) in _ITERATING | _LOOKING:
                continue
            if self.model.functions_called(self._callees.get(id(node))):
                continue
            module = self._imported_module(node)
            if module is None:
                return None
            modules.add(module)
        return modules

    def _imported_module(self, call: cst.Call) -> tuple[str, int] | None:
        """(module, relative level) of an imported function called as `f(...)` or
        `module.f(...)`; None for anything else (methods, locals, builtins)."""
        dotted = dotted_name(call.func)
        if dotted is None or "." in dotted.partition(".")[2]:
            return None
        head, _, rest = dotted.partition(".")
        aliases = self.ctx.aliases
        if head in aliases.relative_imports:
            level, target = aliases.relative_imports[head]
            qualified = f"{target}.{rest}" if rest else target
            return qualified.rpartition(".")[0], level
        qualified = aliases.resolve(dotted)
        if qualified is None or "." not in qualified:
            return None
        return qualified.rpartition(".")[0], 0

    @staticmethod
    def _passes(call: cst.Call, names: set[str]) -> bool:
        return any(mentions_name(arg.value, name) for arg in call.args for name in names)

    def _sets_epoch(self, loop: cst.CSTNode) -> bool:
        """`set_epoch` in the loop, or in a function of this file the loop calls (and the
        functions that one calls)."""
        seen: set[int] = set()
        pending: list[cst.CSTNode] = [loop]
        while pending:
            root = pending.pop()
            if next(method_calls(root, "set_epoch"), None) is not None:
                return True
            for node in iter_nodes(root):
                if type(node) is cst.Call:
                    for info in self.model.functions_called(self._callees.get(id(node))):
                        if id(info.node) not in seen:
                            seen.add(id(info.node))
                            pending.append(info.node)
        return False


def _direct_statements(node: cst.CSTNode):
    """The statements directly under a block-holding node, and the blocks of a compound one
    (not entering functions or classes)."""
    for child in iter_nodes(node, skip=(*scopes(), cst.BaseCompoundStatement)):
        if child is not node and isinstance(child, cst.BaseCompoundStatement) and type(child) not in scopes():
            yield child


def _contains(root: cst.CSTNode, target: cst.CSTNode) -> bool:
    return any(node is target for node in iter_nodes(root))


def _callee_name(call: cst.Call) -> str | None:
    name = dotted_name(call.func)
    return name.rpartition(".")[2] if name is not None else None
