from __future__ import annotations

import functools
from typing import Iterator

import libcst as cst

from torchlint.findings import Finding, Severity
from torchlint.rule import Bad, Good, Rule
from torchlint.semantic.checkpoints import SAVE_FUNCTIONS, CheckpointNames
from torchlint.static.context import ProjectContext, make_finding
from torchlint.static.names import dotted_name

from ._calls import argument
from ._distributed import PREFIXING_WRAPPERS, scopes

#: Nodes whose parts may not run (libcst class names: the import must not load libcst).
_CONDITIONAL = frozenset({"If", "Try", "For", "While", "IfExp", "BooleanOperation"})
WRAPPED, BARE = "wrapped", "bare"
#: Method calls that return the module they are called on.
_SAME_MODULE = frozenset({"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "train", "eval", "requires_grad_", "to_empty"})
LOAD_FUNCTIONS = frozenset({"torch.load", "torch.serialization.load"})
#: Ways code adds or strips the prefix itself.
_PREFIX_HANDLING = ("module.", "consume_prefix_in_state_dict_if_present", "_orig_mod", "strip_prefix", "remove_prefix")


class DdpStateDictPrefixMismatch(Rule):
    """
    ## What it does
    Flags `load_state_dict` of a checkpoint into a bare model when the project saved that
    checkpoint from a model wrapped in `DistributedDataParallel` (or `DataParallel`), and the
    reverse: a checkpoint saved from the bare model (`model.module.state_dict()`, or the model
    before wrapping) loaded into the wrapped one.

    Both ends must be visible: the save `torch.save(<model>.state_dict(), path)` (or a dict
    holding it under a key, directly or through a name), the load
    `<model>.load_state_dict(torch.load(path)[key])` (directly or through a name), the same
    path expression and key, and for each model an unconditional assignment in its function
    that says which it is (`model = DDP(model, ...)`; `model = Net()`, `model.module`). Saves
    and loads in different files match when the path is written the same way and holds a
    string literal. A model that is wrapped on one branch only, a path built differently, and a
    function that adds or strips `module.` itself are left alone.

    ## Why is this bad?
    `DistributedDataParallel` and `DataParallel` keep the model as `.module`, so every key of
    their `state_dict()` starts with `module.`: `module.conv1.weight` where the bare model has
    `conv1.weight`. Loading one into the other raises `Missing key(s) in state_dict ...
    Unexpected key(s) ...` — typically in the evaluation or inference script, after training
    on the cluster finished; with `strict=False` it loads *nothing* and says nothing.

    ## Example
    ```python
    model = DDP(Net().cuda(rank), device_ids=[rank])
    ...
    torch.save(model.state_dict(), "model.pt")

    # evaluate.py
    model = Net()
    model.load_state_dict(torch.load("model.pt"))
    ```

    ## Use instead
    ```python
    torch.save(model.module.state_dict(), "model.pt")  # the bare model's keys
    ```

    ## Known limitations
    Models kept on `self` are followed only when every assignment in the class agrees; a
    checkpoint path passed around under different names is not matched.
    """

    code = "TL806"
    name = "ddp-state-dict-prefix-mismatch"
    summary = "a DDP-saved `state_dict` (`module.` keys) loaded into a bare model, or the reverse: missing and unexpected keys"
    severity = Severity.ERROR
    triggers = ("state_dict",)
    imports = ("torch",)
    cases = [
        Bad(
            """
            import torch
            from torch.nn.parallel import DistributedDataParallel as DDP

            def train(rank):
                model = DDP(Net().to(rank), device_ids=[rank])
                fit(model)
                torch.save(model.state_dict(), "model.pt")

            def evaluate():
                model = Net()
                model.load_state_dict(torch.load("model.pt", map_location="cpu"))  # error
            """
        ),
        Bad(
            files={
                "train.py": """
                    import torch
                    import torch.nn as nn

                    def main(rank, args):
                        model = Net().cuda(rank)
                        model = nn.parallel.DistributedDataParallel(model, device_ids=[rank])
                        fit(model)
                        checkpoint = {"model": model.state_dict(), "epoch": args.epochs}
                        torch.save(checkpoint, "runs/last.pt")
                    """,
                "evaluate.py": """
                    import torch

                    def main():
                        model = Net()
                        ckpt = torch.load("runs/last.pt", map_location="cpu")
                        model.load_state_dict(ckpt["model"])  # error
                    """,
            },
            note="across files, through a dict key and names",
        ),
        Bad(
            """
            import torch
            from torch.nn.parallel import DistributedDataParallel as DDP

            def main(rank, path):
                model = Net().to(rank)
                torch.save(model.state_dict(), path)
                model = DDP(model, device_ids=[rank])
                model.load_state_dict(torch.load(path))  # error
            """,
            note="the reverse: bare keys into the wrapped model",
        ),
        Bad(
            """
            import torch
            from torch.nn.parallel import DistributedDataParallel as DDP

            class Trainer:
                def __init__(self, rank):
                    self.model = DDP(Net().to(rank), device_ids=[rank])

                def save(self):
                    torch.save({"model": self.model.state_dict()}, "snapshot.pt")

            def predict(x):
                net = Net().eval()
                net.load_state_dict(torch.load("snapshot.pt")["model"])  # error
                return net(x)
            """,
            note="a model kept on self, wrapped by every assignment of the class",
        ),
        Good(
            """
            import torch
            from torch.nn.parallel import DistributedDataParallel as DDP

            def train(rank):
                model = DDP(Net().to(rank), device_ids=[rank])
                torch.save(model.module.state_dict(), "model.pt")

            def evaluate():
                model = Net()
                model.load_state_dict(torch.load("model.pt"))
            """,
            note="saved from model.module",
        ),
        Good(
            """
            import torch
            from torch.nn.parallel import DistributedDataParallel as DDP

            def train(rank, args):
                model = Net().to(rank)
                if args.distributed:
                    model = DDP(model, device_ids=[rank])
                torch.save(model.state_dict(), "model.pt")

            def evaluate():
                model = Net()
                state = torch.load("model.pt")
                state = {k.replace("module.", ""): v for k, v in state.items()}
                model.load_state_dict(state)
            """,
            note="wrapped on one branch only, and a load that strips the prefix",
        ),
        Good(
            """
            import torch
            from torch.nn.parallel import DistributedDataParallel as DDP

            def main(rank, path):
                model = DDP(Net().to(rank), device_ids=[rank])
                torch.save(model.state_dict(), path)
                model.load_state_dict(torch.load(path, map_location={"cuda:0": f"cuda:{rank}"}))
            """,
            note="saved and loaded by the wrapped model",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.names = CheckpointNames(ctx)
        #: (save or load, the call, its function or the module, the class of a method)
        self._events: list[tuple[str, cst.Call, cst.CSTNode, cst.ClassDef | None]] = []
        #: one reader per scope: a method's reader is asked again for every `self.<model>`
        self._readers: dict[tuple[int, int], _ScopeReader] = {}
        self._file_handles_prefixes: bool | None = None
        #: each save or load call's ancestors, innermost last: where it sits among the
        #: statements of its scope (a reader orders statements only, see _walk)
        self.ancestors_of: dict[int, tuple[cst.CSTNode, ...]] = {}

    def reader(self, scope: cst.CSTNode, owner: cst.ClassDef | None) -> _ScopeReader:
        key = (id(scope), id(owner))  # a method read as a class's assignments has no owner
        reader = self._readers.get(key)
        if reader is None:
            reader = self._readers[key] = _ScopeReader(self, scope, owner)
        return reader

    def file_mentions_prefix_handling(self) -> bool:
        if self._file_handles_prefixes is None:
            text = self.ctx.text
            self._file_handles_prefixes = any(word in text for word in _PREFIX_HANDLING)
        return self._file_handles_prefixes

    def visit_Call(self, node: cst.Call) -> None:
        if self.names.qualname(node.func) in SAVE_FUNCTIONS:
            kind = "save"
        elif type(node.func) is cst.Attribute and node.func.attr.value == "load_state_dict":
            kind = "load"
        else:
            return
        function = self.ctx.enclosing_function()
        self.ancestors_of[id(node)] = tuple(self.ctx.ancestors)
        self._events.append((kind, node, function or self.ctx.module, self.ctx.enclosing_class() if function else None))

    def finish(self) -> None:
        if not self._events:
            return
        for kind, node, scope, owner in self._events:
            reader = self.reader(scope, owner)
            if kind == "save":
                for key, state in reader.saved(node):
                    path = _path_text(self.ctx.module, node, "f", 1)
                    if path is not None:
                        self.add_fact("save", {"path": path, "key": key, "state": state})
            else:
                found = reader.loaded(node)
                if found is not None:
                    path, key, state = found
                    span = list(self.ctx.position(node))
                    self.add_fact("load", {"path": path, "key": key, "state": state, "span": span})

    @classmethod
    def project_check(cls, project: ProjectContext) -> list[Finding]:
        saves = [(path, fact) for path, facts in project.facts.items() for fact in facts.get(cls.code, {}).get("save", [])]
        findings = []
        for path, facts in project.facts.items():
            for load in facts.get(cls.code, {}).get("load", []):
                for saved_in, save in saves:
                    if save["path"] != load["path"] or save["key"] != load["key"] or save["state"] == load["state"]:
                        continue
                    if saved_in != path and not _has_literal(load["path"]):
                        continue  # `args.out` in two files need not be the same file
                    if project.roots.get(saved_in, "") != project.roots.get(path, ""):
                        continue
                    findings.append(make_finding(cls, path, load["span"], _message(load, save, saved_in, path)))
                    break
        return findings


def _message(load: dict, save: dict, saved_in: str, path: str) -> str:
    where = f"in {saved_in}" if saved_in != path else "in this file"
    if save["state"] == WRAPPED:
        return (
            f"this checkpoint is saved {where} from a model wrapped in DDP/DataParallel, so its keys start with "
            "`module.`; the bare model loading it here has no such keys (missing and unexpected keys). Save "
            "`model.module.state_dict()` instead"
        )
    return (
        f"this checkpoint is saved {where} from the bare model, but it is loaded here into the DDP/DataParallel "
        "wrapper, whose keys start with `module.` (missing and unexpected keys); load it into `model.module`"
    )


def _has_literal(text: str) -> bool:
    return '"' in text or "'" in text


def _path_text(module: cst.Module, call: cst.Call, name: str, position: int) -> str | None:
    arg = argument(call, name, position)
    if arg is None or arg.star:
        return None
    return module.code_for_node(arg.value).strip()


class _ScopeReader:
    """What one function (or the module) shows about its models, in source order."""

    def __init__(self, rule: DdpStateDictPrefixMismatch, scope: cst.CSTNode, owner: cst.ClassDef | None) -> None:
        self.rule = rule
        self.scope = scope
        self.owner = owner
        root = scope.body if type(scope) is cst.FunctionDef else scope
        #: (node, target name, value, conditional) of each single-target assignment, in order
        self.assignments: list[tuple[cst.CSTNode, str, cst.BaseExpression, bool]] = []
        self._order: dict[int, int] = {}
        for index, (node, conditional) in enumerate(_walk(root)):
            self._order[id(node)] = index
            if type(node) is cst.Assign and len(node.targets) == 1:
                name = dotted_name(node.targets[0].target)
                if name is not None:
                    self.assignments.append((node, name, node.value, conditional))

    def _position(self, at: cst.CSTNode) -> float:
        """Where `at` (an assignment of this scope, or a save or load call) comes among the
        statements of the scope, in source order; past the end where it is not in the scope's
        own code (a nested function or a lambda). A call comes right after the innermost
        statement holding it: any statement nested in that one follows the expressions the
        statement starts with (a test, an iterable, a `with` item), which is where a call sits."""
        index = self._order.get(id(at))
        if index is not None:
            return index
        for ancestor in reversed(self.rule.ancestors_of.get(id(at), ())):
            if type(ancestor) is cst.Lambda:
                break
            index = self._order.get(id(ancestor))
            if index is not None:
                return index + 0.5 if type(ancestor) not in _scope_types() else 1 << 62
        return 1 << 62

    def _handles_prefixes(self) -> bool:
        """Whether this scope's text handles `module.` prefixes. The file's text is asked first:
        generating a function's code costs more than the rest of this rule, and most files
        never mention the words."""
        if not self.rule.file_mentions_prefix_handling():
            return False
        if type(self.scope) is not cst.FunctionDef:
            return True
        text = self.rule.ctx.module.code_for_node(self.scope.body)
        return any(word in text for word in _PREFIX_HANDLING)

    # -- which models are wrapped -----------------------------------------------------------------
    def state(self, expr: cst.BaseExpression, at: cst.CSTNode, depth: int = 0) -> str | None:
        """WRAPPED, BARE or None (unknown) for the model `expr` at the node `at`."""
        while type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in _SAME_MODULE:
            expr = expr.func.value
        if type(expr) is cst.Attribute and expr.attr.value == "module":
            return BARE
        if type(expr) is cst.Call:
            qualname = self.rule.ctx.qualname(expr.func)
            if qualname in PREFIXING_WRAPPERS:
                return WRAPPED
            name = dotted_name(expr.func)
            if qualname is None and name is not None and name.rpartition(".")[2][:1].isupper():
                return BARE  # `Net()`: a model class of the project
            torch_model = qualname is not None and qualname.startswith(("torch.nn.", "torchvision.models."))
            if torch_model and not qualname.startswith("torch.nn.functional"):
                return BARE  # `nn.Linear(8, 1)`, `torchvision.models.resnet50()`
            return None
        name = dotted_name(expr)
        if name is None or depth > 8:
            return None
        state = None
        known = False
        position = self._position(at)
        for node, target, value, conditional in self.assignments:
            if target != name or self._order[id(node)] >= position:
                continue
            new = self.state(value, node, depth + 1)
            if not known or not conditional:
                state, known = new, True
            elif new != state:
                state = None  # one branch wraps it, another does not
        if not known and name.startswith("self.") and self.owner is not None and depth == 0:
            return self._class_state(name)
        return state

    def _class_state(self, name: str) -> str | None:
        """`self.model` in a method that does not assign it: the state every assignment of
        the class gives it, when they all agree."""
        states = set()
        for method in self.owner.body.body:
            if type(method) is not cst.FunctionDef:
                continue
            reader = self.rule.reader(method, None)
            for node, target, value, _ in reader.assignments:
                if target == name:
                    states.add(reader.state(value, node, 1))
        return states.pop() if len(states) == 1 else None

    # -- what is saved and loaded ------------------------------------------------------------------
    def saved(self, call: cst.Call) -> Iterator[tuple[str | None, str]]:
        """(key, model state) of each model state dict the save writes."""
        payload = argument(call, "obj", 0)
        if payload is None or payload.star:
            return
        yield from self._state_dicts(payload.value, call, None, 0)

    def _state_dicts(self, expr: cst.BaseExpression, at: cst.CSTNode, key: str | None, depth: int):
        if type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value == "state_dict" and not expr.args:
            state = self.state(expr.func.value, at)
            if state is not None:
                yield key, state
        elif type(expr) is cst.Dict and key is None:
            for element in expr.elements:
                if type(element) is cst.DictElement and type(element.key) is cst.SimpleString:
                    yield from self._state_dicts(element.value, at, element.key.evaluated_value, depth)
        elif type(expr) is cst.Name and depth < 4:
            value = self._last_value(expr.value, at)
            if value is not None:
                yield from self._state_dicts(value, at, key, depth + 1)

    def loaded(self, call: cst.Call) -> tuple[str, str | None, str] | None:
        """(path text, key, model state) of `<model>.load_state_dict(torch.load(path)[key])`."""
        if self._handles_prefixes():
            return None  # the function adds or strips the prefix itself
        target = call.func.value
        state = self.state(target, call)
        argument_ = argument(call, "state_dict", 0)
        if state is None or argument_ is None or argument_.star:
            return None
        source, key = self._loaded_from(argument_.value, call, 0)
        if source is None:
            return None
        path = _path_text(self.rule.ctx.module, source, "f", 0)
        return (path, key, state) if path is not None else None

    def _loaded_from(self, expr: cst.BaseExpression, at: cst.CSTNode, depth: int) -> tuple[cst.Call | None, str | None]:
        key = None
        if type(expr) is cst.Subscript and len(expr.slice) == 1 and type(expr.slice[0].slice) is cst.Index:
            index = expr.slice[0].slice.value
            if type(index) is not cst.SimpleString:
                return None, None
            key, expr = index.evaluated_value, expr.value
        if type(expr) is cst.Name and depth < 4:
            value = self._last_value(expr.value, at)
            if value is None:
                return None, None
            source, inner_key = self._loaded_from(value, at, depth + 1)
            if inner_key is not None and key is not None:
                return None, None
            return source, key if key is not None else inner_key
        if type(expr) is cst.Call and self.rule.names.qualname(expr.func) in LOAD_FUNCTIONS:
            return expr, key
        return None, None

    def _last_value(self, name: str, at: cst.CSTNode) -> cst.BaseExpression | None:
        """The value of the last unconditional assignment to `name` before `at`, when no
        other assignment to it comes between."""
        position = self._position(at)
        found = None
        for node, target, value, conditional in self.assignments:
            if target == name and self._order[id(node)] < position:
                found = None if conditional else value
        return found


@functools.cache
def _scope_types() -> frozenset[type]:
    return frozenset(scopes())


@functools.cache
def _not_expressions() -> frozenset[type]:
    """Every libcst node class that is not an expression (built on first use, like walker's set)."""
    from torchlint.static.walker import _node_types

    return frozenset(t for t in _node_types() if not issubclass(t, cst.BaseExpression))


def _walk(root: cst.CSTNode) -> list[tuple[cst.CSTNode, bool]]:
    """Every node of a scope that is not an expression, in source order (not entering nested
    scopes), with whether it sits under a branch of the scope. An assignment is a statement,
    which no expression holds, so the walk need not enter expressions (most of a function's
    nodes): a reader walks every function that saves or loads, and this loop was half of the
    rule's time on a training script."""
    from torchlint.static.walker import _FIELDS, _child_fields

    node_types = _not_expressions()  # a set lookup: `isinstance` on libcst's ABCs is this loop's cost
    scope_types = _scope_types()
    found: list[tuple[cst.CSTNode, bool]] = []
    stack: list[tuple[cst.CSTNode, bool]] = [(root, False)]
    while stack:
        node, conditional = stack.pop()
        found.append((node, conditional))
        kind = type(node)
        if kind in scope_types and node is not root:
            continue
        inner = conditional or kind.__name__ in _CONDITIONAL
        children = []
        for field in _FIELDS.get(kind) or _child_fields(kind):
            value = getattr(node, field)
            if type(value) in node_types:
                children.append((value, inner))
            elif type(value) in (list, tuple):
                for child in value:
                    if type(child) in node_types:
                        children.append((child, inner))
        children.reverse()
        stack.extend(children)
    return found
