from __future__ import annotations

import libcst as cst

from torchlint.findings import Severity
from torchlint.rule import Bad, Good, Rule
from torchlint.semantic.model import SemanticModel
from torchlint.static.walker import iter_nodes

from ._distributed import RankReader, collective_name, on_subgroup, scopes
from torchlint.semantic.program_facts import is_test_path



class CollectiveUnderRankCondition(Rule):
    """
    ## What it does
    Flags a collective of `torch.distributed` (`all_reduce`, `all_gather`, `broadcast`,
    `reduce`, `barrier`, `all_to_all`, `reduce_scatter`, `gather`, `scatter`, and their
    `_object`/`_tensor`/`_list` variants) that only some ranks reach:

    * it sits in one arm of an `if` whose condition depends on the rank (`if rank == 0:`,
      `if dist.get_rank() == 0:`, `if local_rank == 0:`, `if is_main_process():`,
      `if args.rank % 2:`), and no other arm of its `if`/`elif`/`else` chain calls the same
      collective;
    * or an earlier `if <rank condition>: return` (or `continue`) leaves before it;
    * or, under such a condition, the code calls a function of this file that runs the
      collective (`if rank == 0: evaluate(model)` where `evaluate` all-reduces).

    Left alone: a collective on a process group other than the default one (`group=...`:
    only that group's ranks take part), the same collective in the other arm
    (`gather_object(obj, out, dst=0)` on rank 0, `gather_object(obj, dst=0)` elsewhere), and
    the "rank zero first" idiom where the function calls the same collective under another
    rank condition too (`if rank != 0: barrier()` ... `if rank == 0: barrier()`). Checks of
    whether the job is distributed at all (`if rank != -1:`, `if local_rank is None:`,
    `if world_size > 1:`) are the same on every rank and do not count. `send`/`recv` are
    point-to-point, and `model.no_sync()` is no collective. Test files (`test_*.py`,
    `tests/`, `testing/`) are left alone: tests of distributed code make ranks miss
    collectives on purpose to check timeouts.

    ## Why is this bad?
    A collective completes only when every rank of the group has called it. The ranks that
    skip it go on to the next collective (often the gradient all-reduce of the next
    backward pass) and the job hangs, with no error, until the process group's timeout
    (30 minutes by default with NCCL), or the ranks pair up mismatched collectives and
    exchange the wrong tensors.

    ## Example
    ```python
    if rank == 0:
        val_loss = evaluate(model, val_loader)
        dist.all_reduce(val_loss)
        print(val_loss / world_size)
    ```

    ## Use instead
    ```python
    val_loss = evaluate(model, val_loader)
    dist.all_reduce(val_loss)
    if rank == 0:
        print(val_loss / world_size)
    ```

    ## Known limitations
    The collective must be called as `torch.distributed.<name>` (any import alias), directly
    or through a function of this file; wrappers from other files and libraries
    (`fabric.barrier()`, `accelerator.wait_for_everyone()`) are not followed. A condition is
    recognised as rank-dependent by the names in it (`rank`, `local_rank`, `get_rank()`,
    `is_main_process`, `master_process`...); a flag computed from the rank under another name
    is not.
    """

    code = "TL803"
    name = "collective-under-rank-condition"
    summary = "a collective (`all_reduce`, `barrier`...) that only some ranks call: the others hang"
    severity = Severity.ERROR
    triggers = ("distributed",)
    imports = ("torch",)
    analyses = (SemanticModel,)
    cases = [
        Bad(
            """
            import torch.distributed as dist

            def validate(model, loader, rank):
                loss = evaluate(model, loader)
                if rank == 0:
                    dist.all_reduce(loss)  # error
                    print(loss.item())
            """
        ),
        Bad(
            """
            import torch
            import torch.distributed as dist

            def save(model, path):
                if dist.get_rank() == 0:
                    torch.save(model.state_dict(), path)
                    dist.barrier()  # error
            """,
            note="a barrier only rank 0 reaches",
        ),
        Bad(
            """
            from torch.distributed import broadcast_object_list

            def share(config, args):
                if args.rank % 2:
                    broadcast_object_list([config], src=1)  # error
                else:
                    print("even rank")
            """,
            note="the other arm runs no collective",
        ),
        Bad(
            """
            import torch.distributed as dist

            def finish(stats, is_main_process):
                if not is_main_process:
                    return
                dist.all_reduce(stats)  # error
            """,
            note="an early return on the other ranks",
        ),
        Bad(
            """
            import torch.distributed as dist

            def evaluate(model, loader):
                total = sum(model(x).sum() for x in loader)
                dist.all_reduce(total)
                return total

            def fit(model, loader, local_rank):
                if local_rank == 0:
                    print(evaluate(model, loader))  # error
            """,
            note="a helper of this file that all-reduces, called on one rank",
        ),
        Good(
            """
            import torch.distributed as dist

            def gather(data, rank, world_size):
                if rank == 0:
                    out = [None] * world_size
                    dist.gather_object(data, out, dst=0)
                    return out
                else:
                    dist.gather_object(data, dst=0)
                    return []
            """,
            note="the same collective in both arms",
        ),
        Good(
            """
            import contextlib
            import torch.distributed as dist

            @contextlib.contextmanager
            def zero_first(local_rank):
                if local_rank not in [-1, 0]:
                    dist.barrier()
                yield
                if local_rank == 0:
                    dist.barrier()
            """,
            note="rank zero goes first: every rank calls barrier once",
        ),
        Good(
            """
            import torch.distributed as dist

            def sync(t, rank, world_size):
                if rank != -1:
                    dist.all_reduce(t)
                if world_size > 1 and dist.is_initialized():
                    dist.barrier()
            """,
            note="whether the job is distributed is the same on every rank",
        ),
        Good(
            """
            import torch.distributed as dist

            def pair_sum(t, rank, pair_group):
                if rank < 2:
                    dist.all_reduce(t, group=pair_group)
                if rank == 0:
                    dist.send(t, dst=1)
                elif rank == 1:
                    dist.recv(t, src=0)
            """,
            note="a subgroup collective, and point-to-point sends",
        ),
        Good(
            """
            import torch.distributed as dist

            def step(model, batch, rank):
                if rank == 0:
                    print("step")
                with model.no_sync():
                    model(batch).sum().backward()
                dist.barrier()
            """,
            note="the collective runs on every rank",
        ),
        Bad(
            """
            import torch.distributed as dist

            def finish(model, args):
                if not args.distributed or dist.get_rank() != 0:
                    return
                dist.barrier()  # error
            """,
            note="in a distributed run, only rank 0 gets past the early return",
        ),
        Good(
            """
            import torch.distributed as dist

            def evaluate(model, loader, use_sharded_eval, is_rank0):
                if not use_sharded_eval and not is_rank0:
                    return {}
                signal = model.new_zeros(1)
                if use_sharded_eval:
                    dist.broadcast(signal, src=0)
            """,
            note="the early return and the collective exclude each other: with sharded evaluation nobody returns",
        ),
        Good(
            files={
                "testing/test_timeouts.py": """
                    import torch.distributed as dist

                    def test_monitored_barrier_names_the_missing_rank(rank):
                        if rank != 1:
                            dist.monitored_barrier()
                    """,
            },
            note="a test that makes a rank miss the barrier on purpose",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.model: SemanticModel = ctx.analysis(SemanticModel)
        #: (call, ancestors, collective name, guard) of every collective; calls of this
        #: file's functions under a rank guard, to follow once the file is read.
        self._collectives: list[tuple[cst.Call, tuple, str]] = []
        self._guarded_calls: list[tuple[cst.Call, tuple, object]] = []
        self._ranks: RankReader | None = None

    @property
    def ranks(self) -> RankReader:
        if self._ranks is None:
            self._ranks = RankReader(self.ctx.module)
        return self._ranks

    def visit_Call(self, node: cst.Call) -> None:
        name = collective_name(self.ctx.qualname(node.func))
        ancestors = tuple(self.ctx.ancestors)
        if name is not None:
            if not on_subgroup(node, name):
                self._collectives.append((node, ancestors, name))
            return
        if type(node.func) in (cst.Name, cst.Attribute) and self._some_ranks_only(ancestors, node):
            self._guarded_calls.append((node, ancestors, self.model.value(node.func)))

    def finish(self) -> None:
        if is_test_path(self.ctx.path):
            return  # tests of torch.distributed make ranks miss collectives on purpose (timeouts, monitored_barrier)
        for node, ancestors, name in self._collectives:
            if self._one_sided(node, ancestors, name):
                self.report(
                    node,
                    f"`{name}` is a collective, but only the ranks that take this branch call it: the others never "
                    "join and the job hangs until the process-group timeout; call it on every rank (compute the "
                    "result everywhere, then print or save on one)",
                )
        for node, ancestors, callee in self._guarded_calls:
            found = self._collective_in_helper(callee)
            if found is None:
                continue
            helper, name, line = found
            if self._one_sided(node, ancestors, name):
                self.report(
                    node,
                    f"`{helper}` runs the collective `{name}` (line {line}), but only the ranks that take this branch "
                    "call it: the others never join and the job hangs until the process-group timeout; call it on "
                    "every rank",
                )

    def _some_ranks_only(self, ancestors: tuple, node: cst.CSTNode) -> bool:
        ranks = self.ranks
        guard = next(ranks.guards(ancestors, node, strict=True), None)
        return guard is not None or next(ranks.exits_before(ancestors, node, strict=True), None) is not None

    def _one_sided(self, node: cst.Call, ancestors: tuple, name: str) -> bool:
        """Whether a rank guard around `node` lets some ranks skip collective `name`."""
        guards = self.ranks.guards(ancestors, node, strict=True)
        unbalanced = any(not _other_arms_call(guard, ancestors, node, name, self) for guard, _ in guards)
        exits = self.ranks.exits_before(ancestors, node, strict=True)
        unbalanced = unbalanced or any(name not in set(self._collectives_in(exit_.body)) for exit_ in exits)
        return unbalanced and not self._also_called_elsewhere_under_rank(node, ancestors, name)

    def _also_called_elsewhere_under_rank(self, node: cst.Call, ancestors: tuple, name: str) -> bool:
        """The "rank zero first" idiom: the same collective under another rank-dependent `if`
        of the same function, so every rank calls it once."""
        guards = {id(guard) for guard, _ in self.ranks.guards(ancestors, node, strict=True)}
        scope = next((a for a in reversed(ancestors) if type(a) in scopes()), None)
        for other, other_ancestors, other_name in self._collectives:
            if other is node or other_name != name:
                continue
            other_scope = next((a for a in reversed(other_ancestors) if type(a) in scopes()), None)
            if other_scope is not scope:
                continue
            if any(id(guard) not in guards for guard, _ in self.ranks.guards(other_ancestors, other, strict=True)):
                return True
        return False

    def _collectives_in(self, root: cst.CSTNode):
        for child in iter_nodes(root, skip=scopes()):
            if type(child) is cst.Call:
                name = collective_name(self.ctx.qualname(child.func))
                if name is not None:
                    yield name

    def _collective_in_helper(self, callee) -> tuple[str, str, int] | None:
        """(helper name, collective, its line) when calling `callee` runs a default-group
        collective of this file, unguarded in the helper (or in a helper it calls)."""
        seen: set[int] = set()
        for info in self.model.functions_called(callee):
            if id(info.node) in seen:
                continue
            seen.add(id(info.node))
            for node, ancestors, name in self._collectives:
                if info.node in ancestors and _innermost_function(ancestors) is info.node and not _guarded_in_helper(node, ancestors):
                    return info.node.name.value, name, self.ctx.position(node)[0]
        return None


def _innermost_function(ancestors: tuple) -> cst.CSTNode | None:
    return next((a for a in reversed(ancestors) if type(a) in scopes()), None)


def _guarded_in_helper(node: cst.Call, ancestors: tuple) -> bool:
    """Inside the helper, the collective itself sits under some condition: whether every
    rank reaches it is the helper's business, not this call's."""
    for ancestor in reversed(ancestors):
        if type(ancestor) in scopes():
            return False
        if type(ancestor) in (cst.If, cst.Try, cst.While):
            return True
    return False


def _other_arms_call(guard: cst.If | cst.IfExp, ancestors: tuple, node: cst.CSTNode, name: str, rule: CollectiveUnderRankCondition) -> bool:
    """Whether an arm of `guard`'s `if/elif/else` chain other than the one holding `node`
    calls collective `name` (any other arm: `if rank == 0: ... elif rank == 1: ...` pairs
    the two ranks of a two-rank job on purpose)."""
    chain = [*ancestors, node]
    holding = {id(item) for item in chain}
    if type(guard) is cst.IfExp:
        return any(found == name for arm in (guard.body, guard.orelse) if id(arm) not in holding for found in rule._collectives_in(arm))
    index = next(i for i, item in enumerate(chain) if item is guard)
    while index > 0 and type(chain[index - 1]) is cst.If and chain[index - 1].orelse is chain[index]:
        index -= 1  # up to the `if` that starts the chain
    arms: list[cst.CSTNode] = []
    statement: cst.CSTNode | None = chain[index]
    while type(statement) is cst.If:
        arms.append(statement.body)
        statement = statement.orelse
    if type(statement) is cst.Else:
        arms.append(statement.body)
    return any(
        found == name for arm in arms if id(arm) not in holding for found in rule._collectives_in(arm)
    )
