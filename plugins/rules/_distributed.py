"""Shared reading of distributed (DDP) training code for the TL8xx rules: which calls are
collectives, samplers, loaders and wrappers, and which conditions split the ranks.
Not part of the engine; never imports torch.

A *rank-dependent* condition is one whose truth differs between the processes of one job:
`rank == 0`, `dist.get_rank() % 2`, `is_main_process()`, `args.local_rank in [-1, 0]`,
`master_process`. A condition that is the same on every rank is not: `world_size > 1`,
`dist.is_initialized()`, and the "are we distributed at all?" checks written against the
rank's sentinel (`rank != -1`, `local_rank is None`, `rank >= 0`).
"""

from __future__ import annotations

import functools
import re
from pathlib import PurePosixPath
from typing import Iterator, Sequence

import libcst as cst

from torchlint.static.names import dotted_name
from torchlint.static.walker import iter_nodes

# -- what the calls are ---------------------------------------------------------------------

DISTRIBUTED_SAMPLER = frozenset(
    {"torch.utils.data.DistributedSampler", "torch.utils.data.distributed.DistributedSampler"}
)
#: Every torch sampler: a call to one is never None.
TORCH_SAMPLERS = DISTRIBUTED_SAMPLER | frozenset(
    f"torch.utils.data{module}.{name}"
    for module in ("", ".sampler")
    for name in ("RandomSampler", "SequentialSampler", "SubsetRandomSampler", "WeightedRandomSampler")
)
DATALOADER = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
DDP = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
    }
)
#: Wrappers whose `state_dict()` keys start with `module.`.
PREFIXING_WRAPPERS = DDP | frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel"})
INIT_PROCESS_GROUP = frozenset({"torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group"})

#: Collective -> the 0-based position of its `group` parameter: a collective on a subgroup
#: is meant to be called by that subgroup's ranks only.
COLLECTIVES: dict[str, int] = {
    "all_reduce": 2,
    "all_reduce_coalesced": 2,
    "all_gather": 2,
    "all_gather_into_tensor": 2,
    "all_gather_object": 2,
    "all_gather_coalesced": 2,
    "_all_gather_base": 2,
    "broadcast": 2,
    "broadcast_object_list": 2,
    "reduce": 3,
    "reduce_scatter": 3,
    "reduce_scatter_tensor": 3,
    "_reduce_scatter_base": 3,
    "all_to_all": 2,
    "all_to_all_single": 4,
    "gather": 3,
    "gather_object": 3,
    "scatter": 3,
    "scatter_object_list": 3,
    "barrier": 0,
    "monitored_barrier": 0,
}
_COLLECTIVE_MODULES = ("torch.distributed", "torch.distributed.distributed_c10d")


def collective_name(qualname: str | None) -> str | None:
    """`all_reduce` for `torch.distributed.all_reduce`; None for anything else (`send`,
    `recv` and `model.no_sync()` are not collectives)."""
    if qualname is None:
        return None
    module, _, name = qualname.rpartition(".")
    return name if module in _COLLECTIVE_MODULES and name in COLLECTIVES else None


def on_subgroup(call: cst.Call, name: str) -> bool:
    """The collective names a process group other than the default one (or may, through
    `*args`/`**kwargs`): only that group's ranks take part."""
    for arg in call.args:
        if arg.star:
            return True
        if arg.keyword is not None and arg.keyword.value == "group":
            return not (type(arg.value) is cst.Name and arg.value.value == "None")
    positional = [arg for arg in call.args if arg.keyword is None]
    index = COLLECTIVES[name]
    return len(positional) > index and not (type(positional[index].value) is cst.Name and positional[index].value.value == "None")


# -- rank-dependent conditions ----------------------------------------------------------------

#: `rank`, `local_rank`, `args.global_rank`, `RANK`, `ddp_local_rank`, `self.rank`.
_RANK = re.compile(
    r"^_*(?:(?:local|global|node|ddp|ddp_local|world|process|proc|my|dist|distributed|cur|current|this|group|gpu|worker)_)?rank$",
    re.IGNORECASE,
)
#: Flags and predicates that name the primary process: `master_process`, `is_main_process()`,
#: `accelerator.is_local_main_process`, `trainer.is_global_zero`, `is_world_process_zero()`.
_PRIMARY = re.compile(
    r"^_*(?:is_)?(?:local_|global_|world_)?"
    r"(?:main|master|primary|chief|leader|rank_?0|rank_?zero|global_zero|process_zero|zero_rank)"
    r"(?:_(?:process|proc|node|worker|rank|gpu|ordinal))?$",
    re.IGNORECASE,
)
_RANK_GETTERS = re.compile(r"^_*get_(?:local_|global_|node_|world_)?rank$")
_ENV_RANK = re.compile(r"""^[rRbBuU]*['"](?:LOCAL_RANK|RANK|GLOBAL_RANK|NODE_RANK|SLURM_PROCID|SLURM_LOCALID|OMPI_COMM_WORLD_RANK)['"]$""")


def _last_name(node: cst.BaseExpression) -> str | None:
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        return node.attr.value
    return None


def _string_text(node: cst.CSTNode) -> str:
    return node.value if type(node) is cst.SimpleString else ""


#: A GPU index compared with a number (`if self.gpu_id == 0:`): in DDP code the local rank
#: under another name. Only in comparisons: `if args.gpu:` may be a "use the GPU" flag.
_DEVICE_INDEX = re.compile(r"^_*(?:local_)?(?:gpu|gpu_id|gpu_idx|gpu_index|device_id|device_idx|local_device)$", re.IGNORECASE)


def _constant(node: cst.CSTNode) -> object:
    """-1, 0, None (as Python values) for those literals; a sentinel for anything else."""
    if type(node) is cst.Integer:
        return int(node.value) if node.value.isdigit() else _OTHER
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus and type(node.expression) is cst.Integer:
        return -int(node.expression.value) if node.expression.value.isdigit() else _OTHER
    if type(node) is cst.Name and node.value == "None":
        return None
    return _OTHER


_OTHER = object()
#: Comparison operators by libcst class name (names: the import must not load libcst),
#: as written and with the sides swapped.
_OPERATOR = {"LessThan": "<", "GreaterThanEqual": ">=", "GreaterThan": ">", "LessThanEqual": "<="}
_FLIPPED = {"LessThan": ">", "GreaterThanEqual": "<=", "GreaterThan": "<", "LessThanEqual": ">="}


class RankReader:
    """Which expressions are the rank and which conditions depend on it, in one file.

    Besides the usual names, the names the file binds to the rank count like it
    (`self.gpu_id = int(os.environ["LOCAL_RANK"])`, `gpu = rank`), and so do the flags it
    binds to a rank-dependent condition (`is_logger = rank == 0`)."""

    def __init__(self, module: cst.Module | None = None) -> None:
        self.rank_names: set[str] = set()
        self.flag_names: set[str] = set()
        #: (id(if statement's test), strict, holds) -> the answer: every call under an `if` asks again.
        self._tests: dict[tuple, bool] = {}
        if module is not None:
            self._learn(module)

    def _learn(self, module: cst.Module) -> None:
        from torchlint.static.names import _iter_statements

        assignments = []
        for statement in _iter_statements(module.body):
            if type(statement) is cst.Assign and len(statement.targets) == 1:
                name = _last_name(statement.targets[0].target)
                if name is not None:
                    assignments.append((name, statement.value))
        for _ in range(2):  # an alias of an alias
            for name, value in assignments:
                if self.is_rank(value):
                    self.rank_names.add(name)
                elif type(value) in (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation) and self.dependent(value):
                    self.flag_names.add(name)

    # -- expressions ------------------------------------------------------------------------
    def is_rank(self, node: cst.CSTNode, *, compared: bool = False) -> bool:
        """An expression that is this process's rank: a rank variable, `dist.get_rank()`, the
        rank read from the launcher's environment (`int(os.environ["LOCAL_RANK"])`), and,
        when `compared` with a number, a GPU index (`gpu_id`)."""
        kind = type(node)
        if kind is cst.Name or kind is cst.Attribute:
            name = _last_name(node)
            if name is None:
                return False
            return _RANK.match(name) is not None or name in self.rank_names or (compared and _DEVICE_INDEX.match(name) is not None)
        if kind is cst.Call:
            name = _last_name(node.func)
            if name is not None and _RANK_GETTERS.match(name):
                return True
            if name in ("int", "str") and node.args:
                return self.is_rank(node.args[0].value, compared=compared)
            if name in ("get", "getenv") and node.args:
                return _ENV_RANK.match(_string_text(node.args[0].value)) is not None
            return False
        if kind is cst.Subscript and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index:
            return _ENV_RANK.match(_string_text(node.slice[0].slice.value)) is not None
        return False

    def is_flag(self, node: cst.CSTNode) -> bool:
        """`master_process`, `args.is_master`, `is_main_process()`, `accelerator.is_main_process`."""
        if type(node) is cst.Call:
            node = node.func
        name = _last_name(node)
        return name is not None and (_PRIMARY.match(name) is not None or name in self.flag_names)

    def mentions(self, node: cst.CSTNode, *, compared: bool = False) -> bool:
        return any(
            self.is_rank(child, compared=compared) or self.is_flag(child) for child in iter_nodes(node, skip=(cst.Lambda,))
        )

    def _is_mode_check(self, comparison: cst.Comparison) -> bool:
        """`rank != -1`, `local_rank is None`, `rank >= 0`, `rank > -1`: whether the job is
        distributed at all, the same answer on every rank."""
        if len(comparison.comparisons) != 1:
            return False
        target = comparison.comparisons[0]
        left, right = comparison.left, target.comparator
        operator = type(target.operator).__name__
        if self.is_rank(left, compared=True):
            value, symbol = _constant(right), _OPERATOR.get(operator)
        elif self.is_rank(right, compared=True):
            value, symbol = _constant(left), _FLIPPED.get(operator)
        else:
            return False
        if value is None or value == -1:
            return True
        return value == 0 and symbol in (">=", "<")

    def dependent(self, test: cst.BaseExpression) -> bool:
        """Whether the condition `test` may be true on some ranks and false on others."""
        kind = type(test)
        if kind is cst.BooleanOperation:
            return self.dependent(test.left) or self.dependent(test.right)
        if kind is cst.UnaryOperation:
            return self.dependent(test.expression)
        if kind is cst.Comparison:
            parts = [test.left, *(target.comparator for target in test.comparisons)]
            if not any(self.mentions(part, compared=True) for part in parts):
                return False
            return not self._is_mode_check(test)
        if kind is cst.Call and _last_name(test.func) in ("bool", "int", "not_"):
            return bool(test.args) and self.dependent(test.args[0].value)
        return self.is_rank(test) or self.is_flag(test) or (kind is cst.BinaryOperation and self.mentions(test))

    def splits(self, test: cst.BaseExpression, holds: bool = True) -> bool:
        """Whether the ranks on which `test` holds (or, with `holds=False`, fails) are surely
        some ranks and not others, whatever the rank-independent parts of it say.
        `rank == 0 and epoch % 10 == 0` splits them on every tenth epoch; `rank == 0 or
        use_fsdp` may let every rank through, and so may the failing side of
        `not use_fsdp and not is_rank0`."""
        kind = type(test)
        if kind is cst.UnaryOperation and type(test.operator) is cst.Not:
            return self.splits(test.expression, not holds)
        if kind is cst.BooleanOperation:
            conjunction = (type(test.operator) is cst.And) == holds  # De Morgan for the failing side
            left, right = self.splits(test.left, holds), self.splits(test.right, holds)
            return (left or right) if conjunction else (left and right)
        return self.dependent(test)

    def _test_dependent(self, test: cst.BaseExpression, strict: bool, holds: bool) -> bool:
        key = (id(test), strict, holds)
        found = self._tests.get(key)
        if found is None:
            found = self._tests[key] = self.splits(test, holds) if strict else self.dependent(test)
        return found

    # -- places ------------------------------------------------------------------------------
    def guards(self, ancestors: Sequence[cst.CSTNode], node: cst.CSTNode, *, strict: bool = False) -> Iterator[tuple[cst.CSTNode, str]]:
        """Each enclosing `if` (or `a if c else b`) of `node` within its function whose
        condition depends on the rank, with the arm `node` is in ('body' or 'orelse'),
        innermost first. `strict`: only conditions that surely split the ranks there
        (`splits`); otherwise any condition that mentions the rank, a generous reading for
        rules that stay quiet under a guard."""
        chain = [*ancestors, node]
        for index in range(len(chain) - 2, -1, -1):
            holder = chain[index]
            if type(holder) in scopes():
                return
            if type(holder) in (cst.If, cst.IfExp):
                arm = _arm_below(holder, chain[index + 1])
                if arm is not None and self._test_dependent(holder.test, strict, arm == "body"):
                    yield holder, arm

    def exits_before(self, ancestors: Sequence[cst.CSTNode], node: cst.CSTNode, *, strict: bool = False) -> Iterator[cst.If]:
        """Earlier statements of the blocks around `node` (within its function) that leave on
        some ranks only: `if rank != 0: return`."""
        chain = [*ancestors, node]
        for index in range(len(chain) - 2, -1, -1):
            holder = chain[index]
            if type(holder) in scopes():
                return
            if type(holder).__name__ not in _BLOCKS:
                continue
            below = chain[index + 1]
            for statement in holder.body:
                if statement is below:
                    break
                if (
                    type(statement) is cst.If
                    and statement.orelse is None
                    and always_leaves(statement.body)
                    and self._test_dependent(statement.test, strict, False)
                ):
                    yield statement

    def guarded(self, ancestors: Sequence[cst.CSTNode], node: cst.CSTNode) -> bool:
        """Whether `node` runs on some ranks only: under a rank-dependent `if`, after a
        rank-dependent early exit, or in a function decorated to run on rank zero."""
        if next(self.guards(ancestors, node), None) is not None or next(self.exits_before(ancestors, node), None) is not None:
            return True
        for ancestor in ancestors:
            if type(ancestor) is cst.FunctionDef and any(
                _RANK_ZERO_DECORATOR.search(dotted_name(_decorator_callee(d.decorator)) or "") for d in ancestor.decorators
            ):
                return True
        return False


# -- where a node is ---------------------------------------------------------------------------

_BLOCKS = ("IndentedBlock", "SimpleStatementSuite", "Module")


@functools.lru_cache(maxsize=None)
def scopes() -> tuple[type, ...]:
    """The nodes that open a scope: functions, classes, lambdas. (A function, not a module
    constant: touching libcst at import time would load it for runs that parse nothing.)"""
    return (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def _arm_below(statement: cst.If | cst.IfExp, below: cst.CSTNode | None) -> str | None:
    """'body' or 'orelse' when `below` (the next ancestor) is that arm of `statement`."""
    if below is None:
        return None
    if below is statement.body:
        return "body"
    if below is statement.orelse:
        return "orelse"
    return None


def always_leaves(block: cst.BaseSuite) -> bool:
    """A block that ends in return / continue / break / raise / `sys.exit()`."""
    if type(block) is cst.SimpleStatementSuite:
        smalls = list(block.body)
    else:
        body = list(block.body)
        smalls = list(body[-1].body) if body and type(body[-1]) is cst.SimpleStatementLine else []
    for small in smalls:
        kind = type(small)
        if kind in (cst.Return, cst.Raise, cst.Continue, cst.Break):
            return True
        if kind is cst.Expr and type(small.value) is cst.Call and _last_name(small.value.func) in ("exit", "_exit"):
            return True
    return False


_RANK_ZERO_DECORATOR = re.compile(r"rank_?zero|rank_?0|master_only|main_process|main_only|only_main|on_main|primary_only", re.IGNORECASE)


def _decorator_callee(expr: cst.BaseExpression) -> cst.BaseExpression:
    return expr.func if type(expr) is cst.Call else expr


# -- names and scopes -------------------------------------------------------------------------


def scope_nodes(scope: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Nodes of a function body (or of a module), not entering nested functions and classes."""
    root = scope.body if type(scope) is cst.FunctionDef else scope
    yield from iter_nodes(root, skip=scopes())


def parent_map(root: cst.CSTNode) -> dict[int, cst.CSTNode]:
    """id(node) -> parent, for every node under `root` (nested scopes included)."""
    parents: dict[int, cst.CSTNode] = {}
    for node in iter_nodes(root):
        for child in _children(node):
            parents[id(child)] = node
    return parents


def _children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    from torchlint.static.walker import _child_fields

    for name in _child_fields(type(node)):
        value = getattr(node, name)
        for child in value if type(value) in (list, tuple) else (value,):
            if isinstance(child, cst.CSTNode):
                yield child


def assigned_name(call: cst.CSTNode, parents: dict[int, cst.CSTNode]) -> str | None:
    """`train_sampler` for `train_sampler = DistributedSampler(ds)` (also through
    `... if distributed else None` and parentheses); `self.loader` for attribute targets."""
    node = call
    parent = parents.get(id(node))
    while type(parent) is cst.IfExp and node is not parent.test:
        node, parent = parent, parents.get(id(parent))
    if type(parent) is cst.Assign and parent.value is node and len(parent.targets) == 1:
        return dotted_name(parent.targets[0].target)
    if type(parent) in (cst.AnnAssign, cst.NamedExpr) and parent.value is node:
        return dotted_name(parent.target)
    return None


def mentions_name(node: cst.CSTNode, name: str) -> bool:
    """`name` (a dotted name) occurs in `node` as a whole name or attribute chain."""
    for child in iter_nodes(node):
        if type(child) in (cst.Name, cst.Attribute) and dotted_name(child) == name:
            return True
    return False


def method_calls(node: cst.CSTNode, method: str, *, into_scopes: bool = True) -> Iterator[cst.Call]:
    nodes = iter_nodes(node) if into_scopes else iter_nodes(node, skip=scopes())
    for child in nodes:
        if type(child) is cst.Call and type(child.func) is cst.Attribute and child.func.attr.value == method:
            yield child


# -- files of the project ------------------------------------------------------------------------


def module_file(importer: str, module: str, level: int, files: frozenset[str]) -> str | None:
    """The checked file that `import module` (`level` dots) means in `importer`: next to it
    (or up `level - 1` folders for a relative import), else the one file whose path ends
    like the module's. None when no checked file, or several, fit."""
    folder = PurePosixPath(importer.replace("\\", "/")).parent
    for _ in range(max(level - 1, 0)):
        folder = folder.parent
    relative = module.replace(".", "/")
    by_posix = {PurePosixPath(f.replace("\\", "/")).as_posix(): f for f in files}
    near = [folder / f"{relative}.py", folder / relative / "__init__.py"] if module else [folder / "__init__.py"]
    for candidate in near:
        if candidate.as_posix() in by_posix:
            return by_posix[candidate.as_posix()]
    if level or not module:
        return None
    endings = (f"/{relative}.py", f"/{relative}/__init__.py")
    matches = [f for posix, f in by_posix.items() if posix.endswith(endings) or posix in (f"{relative}.py", f"{relative}/__init__.py")]
    return matches[0] if len(matches) == 1 else None
