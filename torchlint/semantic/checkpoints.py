"""Where a checkpoint comes from and where it is read: the questions TL301
(load-without-map-location) asks, answerable for any rule about `torch.save`/`torch.load`.

A `torch.load` without `map_location` is only a portability bug when the file may hold
tensors saved on an accelerator by another process. It is not one when:

* the same process saved that file just before: a save and a load of the same path (the
  same expression text) where the save runs first, in one function, at module level, or in
  a function the script's main sequence (module level, `if __name__ == "__main__":`, and a
  `main()` called from there) calls before the function that loads, or in a function that
  saves and then calls the one that loads (`train()` ends with `test()`) — see
  `checkpoint_flow.CheckpointFlow`; or in one function (`saved_in_same_function`);
* the project only ever saves that path with a payload that holds no tensors (a numpy
  array, a list or dict of numbers, comprehensions of them, names bound only to them) —
  recorded as a file fact and joined across files (`holds_no_tensors`, `writers_of`);
* the writer moved its model to the CPU first, or never speaks of devices (`saved_model`,
  `cpu_only_writer`), or gathers distributed state to the CPU (`offloads_state_to_cpu`);
* the path lies in a temporary directory this run made (`in_temp_dir`), in a folder an
  earlier step was told to write into (`written_by_earlier_step`), or is a cache the other
  arm of an existence check writes (`cache_of_this_code`);
* writer and reader are scripts that run on one GPU or not at all (`cuda_only_script`);
* the keys the load reads are those of a format the project writes only with CPU tensors
  (`checkpoint_formats`: `state["model"]`, `state["args"]` against the dict a trainer hands
  to its saving helper after `move_to_cpu`).

`CheckpointNames` finds `torch.load`/`torch.save` also as bare names after `from torch import *`.
What the code does with a load's result is `torchlint.semantic.loaded`'s question.
"""

from __future__ import annotations

import re
import libcst as cst

from torchlint.static.names import dotted_name

SAVE_FUNCTIONS = frozenset({"torch.save", "torch.serialization.save"})
LOAD_FUNCTIONS = frozenset({"torch.load", "torch.serialization.load"})


def argument(call: cst.Call, name: str, position: int) -> cst.Arg | None:
    """The argument bound to parameter `name`, passed by keyword or at `position` (0-based).
    (The rules' `_calls.argument`: the semantic model does not import the plugins.)"""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return positional[position] if position < len(positional) else None


class CheckpointNames:
    """`torch.load` / `torch.save` by qualified name, and also as a bare `load(...)` or
    `save(...)` after `from torch import *` (or `from torch.serialization import *`): the
    alias table does not follow star imports. The bare name counts only where the file's
    last star import is torch's and nothing else in the file binds it."""

    _STAR_MODULES = ("torch", "torch.serialization")
    _NAMES = ("load", "save")

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self._star: str | None | bool = False  # False: not computed yet

    def qualname(self, func: cst.BaseExpression) -> str | None:
        found = self.ctx.qualname(func)
        if found is not None or type(func) is not cst.Name or func.value not in self._NAMES:
            return found
        star = self._torch_star()
        if star is None or func.value in self._module_bound:
            return None
        for ancestor in self.ctx.ancestors:
            if type(ancestor) in (cst.FunctionDef, cst.Lambda) and func.value in self.ctx.bindings_of(ancestor):
                return None  # a parameter or local of that name
        return f"{star}.{func.value}"

    def _torch_star(self) -> str | None:
        if self._star is not False:
            return self._star
        from torchlint.static.names import _bound_names, _iter_statements, dotted_name

        last = None
        bound: set[str] = set()
        statements = list(_iter_statements(self.ctx.module.body))
        for statement in statements:
            if type(statement) is cst.ImportFrom and type(statement.names) is cst.ImportStar:
                module = dotted_name(statement.module) if statement.module is not None and not statement.relative else None
                last = module if module in self._STAR_MODULES else None
            bound.update(_bound_names(statement))
        if last is not None:
            aliases = self.ctx.aliases
            bound.update(aliases.aliases, aliases.relative_imports)
            # An ambiguous import is dropped from the alias table: any import of the name counts.
            for statement in statements:
                if type(statement) in (cst.Import, cst.ImportFrom) and type(statement.names) is not cst.ImportStar:
                    for alias in statement.names:
                        name = alias.asname.name if alias.asname is not None else alias.name
                        if type(name) is cst.Name:
                            bound.add(name.value)
        self._module_bound = frozenset(bound)
        self._star = last
        return last


#: pytest's temporary-directory fixtures: a test's own files, created by this process.
_TEMP_FIXTURES = frozenset({"tmp_path", "tmpdir", "tmp_path_factory", "tmpdir_factory"})


def in_temp_dir(ctx, function: cst.FunctionDef | None, path: cst.BaseExpression) -> bool:
    """Is `path` inside a temporary directory this process made (pytest's `tmp_path` and
    `tmpdir` fixtures, `tempfile.*`), directly or through names the function binds
    (`out = tmp_path / "out"`, `with tempfile.TemporaryDirectory() as d`)? Whatever is in
    it was written on this machine by this run, so its devices exist here."""
    if function is None:
        return False
    bindings = _path_bindings(function)
    params = {p.name.value for p in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params)}
    seen: set[str] = set()
    from torchlint.static.walker import iter_nodes

    def temp(expr: cst.BaseExpression, depth: int) -> bool:
        for inner in iter_nodes(expr):
            if type(inner) is cst.Call and (ctx.qualname(inner.func) or "").startswith("tempfile."):
                return True
            if type(inner) is not cst.Name or inner.value in seen:
                continue
            name = inner.value
            seen.add(name)
            if name in _TEMP_FIXTURES and name in params:
                return True
            if depth < 4 and any(temp(value, depth + 1) for value in bindings.get(name, ())):
                return True
        return False

    return temp(path, 0)


def _path_bindings(function: cst.FunctionDef) -> dict[str, list[cst.BaseExpression]]:
    """name -> the values assigned to it in `function` (`with x as name` included)."""
    from torchlint.static.walker import iter_nodes

    found: dict[str, list[cst.BaseExpression]] = {}
    for node in iter_nodes(function.body, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        kind = type(node)
        if kind is cst.Assign:
            for target in node.targets:
                if type(target.target) is cst.Name:
                    found.setdefault(target.target.value, []).append(node.value)
        elif kind is cst.WithItem and node.asname is not None and type(node.asname.name) is cst.Name:
            found.setdefault(node.asname.name.value, []).append(node.item)
    return found


def path_text(module: cst.Module, call: cst.Call, name: str, position: int) -> str | None:
    arg = argument(call, name, position)
    if arg is None or arg.star:
        return None
    return module.code_for_node(arg.value).strip()


def bound_path_text(ctx, call: cst.Call, name: str, position: int) -> str | None:
    """For a path argument that is a name bound once in the enclosing function, the text of
    the value bound (`checkpoint = os.path.join(out, f"{step}.pt")`; `torch.load(checkpoint)`
    reads `os.path.join(out, f"{step}.pt")`), to match a save that spells the path out."""
    arg = argument(call, name, position)
    function = ctx.enclosing_function()
    if arg is None or arg.star or type(arg.value) is not cst.Name or function is None:
        return None
    values = _path_bindings(function).get(arg.value.value, [])
    return ctx.module.code_for_node(values[0]).strip() if len(values) == 1 else None


def file_name_pattern(ctx, call: cst.Call, name: str, position: int) -> str | None:
    """The file name a path argument spells, with `{}` for its computed parts:
    `data_dir / "train.pt"` -> "train.pt", `os.path.join(root, "meta.bin")` -> "meta.bin",
    `f"{out}/f0_{rank}_{n}.pt"` -> "f0_{}_{}.pt". Two places spelling the same pattern name
    the same file written to different folders (`destination_path / "train.pt"` in the
    script that prepares it, `data_dir / "train.pt"` where it is read). None when the name
    is all computed, or too bare to tell files apart (`f"{name}.pt"`)."""
    arg = argument(call, name, position)
    if arg is None or arg.star:
        return None
    expr = arg.value
    function = ctx.enclosing_function()
    if type(expr) is cst.Name and function is not None:
        values = _path_bindings(function).get(expr.value, [])
        if len(values) != 1:
            return None
        expr = values[0]  # `path = f"{out}/f0_{rank}.pt"` then `torch.save(x, path)`
    text = _spelled_name(expr)
    if text is None:
        return None
    base = text.rpartition("/")[2]
    fixed = base.replace("{}", "")
    if "." not in fixed or len(fixed) < 4 or fixed.startswith(".") and "{}" in base:
        return None
    return base


def _spelled_name(expr: cst.BaseExpression) -> str | None:
    kind = type(expr)
    if kind is cst.SimpleString:
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    if kind is cst.FormattedString:
        return "".join(part.value if type(part) is cst.FormattedStringText else "{}" for part in expr.parts)
    if kind is cst.BinaryOperation and type(expr.operator) in (cst.Divide, cst.Add):
        return _spelled_name(expr.right)  # `folder / "x.pt"`, `prefix + "x.pt"`
    if kind is cst.Call and expr.args and (dotted_name(expr.func) or "").endswith("path.join"):
        return _spelled_name(expr.args[-1].value)
    if kind is cst.Call and type(expr.func) is cst.Name and expr.func.value == "str" and len(expr.args) == 1:
        return _spelled_name(expr.args[0].value)
    return None


#: Words that say a file's code may put tensors on an accelerator, wherever a word starts
#: (`to_device`, `use_cuda`, `devices`, `ngpu` count; `dumps` does not).
_DEVICE_WORDS = re.compile(r"(?<![a-z])(?:cuda|device|accelerat|xla|xpu|mps|n?gpu)")


def cpu_only_writer(ctx, payload: cst.BaseExpression) -> bool:
    """A save whose tensors, if any, are surely on the CPU: its file never speaks of devices
    (no `cuda`, `device`, `gpu`...), and the payload is not a parameter of the saving
    function (a `save_checkpoint(state, path)` helper writes whatever its callers pass)."""
    if _DEVICE_WORDS.search(ctx.text.lower()):
        return False
    function = ctx.enclosing_function()
    if function is None:
        return True
    params = function.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    from torchlint.static.walker import iter_nodes

    return not any(type(inner) is cst.Name and inner.value in names for inner in iter_nodes(payload))


#: Methods that return the module (or tensor) they are called on, possibly moved.
_CHAINED = frozenset({"eval", "train", "cpu", "cuda", "to", "half", "float", "double", "bfloat16", "requires_grad_"})


def _chain_root(expr: cst.BaseExpression) -> tuple[str | None, list[str]]:
    """`transformer.eval().cpu()` -> ("transformer", ["eval", "cpu"])."""
    methods: list[str] = []
    while type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in _CHAINED:
        methods.append(expr.func.attr.value)
        expr = expr.func.value
    return (expr.value if type(expr) is cst.Name else None), methods[::-1]


def _moves_to_cpu(call: cst.Call) -> bool | None:
    """True for `.cpu()` / `.to("cpu")`, False for another move, None for no move."""
    method = call.func.attr.value if type(call.func) is cst.Attribute else None
    if method == "cpu":
        return True
    if method == "cuda":
        return False
    if method == "to":
        first = call.args[0].value if call.args else None
        return type(first) is cst.SimpleString and first.evaluated_value == "cpu" if first is not None else None
    return None


def saved_model(ctx, payload: cst.BaseExpression) -> tuple[str | None, bool]:
    """For `torch.save(m.state_dict(), p)` (or `torch.save(m, p)`): the class `m` was built
    from in this function (`m = TransformerNet().to(device)`), and whether `m` was moved to
    the CPU by an earlier statement of the same block (`m.eval().cpu()`, `m = m.cpu()`) with
    no move back in between: the checkpoint then holds CPU tensors whatever device trained it."""
    expr = payload
    if type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value == "state_dict" and not expr.args:
        expr = expr.func.value
    name, methods = _chain_root(expr)
    if name is None:
        return None, False
    cpu = "cpu" in methods  # `torch.save(m.cpu().state_dict(), p)`
    statements, index = _enclosing_block(ctx)
    if not cpu and statements is not None:
        from torchlint.static.walker import iter_nodes

        for statement in reversed(statements[:index]):
            moves = [
                _moves_to_cpu(inner)
                for inner in iter_nodes(statement)
                if type(inner) is cst.Call and type(inner.func) is cst.Attribute and _chain_root(inner.func.value)[0] == name
            ]
            moves = [m for m in moves if m is not None]
            if moves:
                cpu = moves[-1]
                break
    return model_class(ctx, name), cpu


def _enclosing_block(ctx) -> tuple[list | None, int]:
    """The statements of the block holding the node being visited, and its statement's index."""
    ancestors = ctx.ancestors
    for index in range(len(ancestors) - 1, 0, -1):
        parent = ancestors[index - 1]
        body = parent.body if type(parent) in (cst.IndentedBlock, cst.Module) else None
        if body is not None and ancestors[index] in body:
            return list(body), list(body).index(ancestors[index])
    return None, 0


#: Keywords that hand a call the folder it writes into (`output_dir=out_dir`).
_OUTPUT_KEYWORD = re.compile(r"^(?:out|output|save|dest|destination)(?:_?(?:dir|path|folder|root))?$")
#: Callees that fetch files made elsewhere rather than write them here.
_FETCHING = re.compile(r"download|fetch|hub|snapshot|pull|copy", re.IGNORECASE)


def written_by_earlier_step(ctx, load: cst.Call) -> bool:
    """`convert_checkpoint(src, output_dir=out_dir)` then `torch.load(out_dir / "model.pth")`
    in the same block: an earlier call of this function was handed the load's folder as the
    folder it writes into, so this process wrote the file on this machine (its devices exist
    here). Not for downloads and copies, which bring files made elsewhere."""
    writers = _latest_folder_writers(ctx, load)
    return bool(writers) and not any(_FETCHING.search(dotted_name(w.func) or "") for w in writers)


def fetched_from_elsewhere(ctx, load: cst.Call) -> bool:
    """Is the loaded file visibly brought from elsewhere: the latest earlier step handed its
    folder downloads or copies (`download(url, output_dir=out)`), or its path is the result
    of such a call (`torch.load(hf_hub_download(...))`, `path = fetch(...)`)? Then it is not
    one of this project's checkpoints, whoever in the project writes those."""
    writers = _latest_folder_writers(ctx, load)
    if any(_FETCHING.search(dotted_name(w.func) or "") for w in writers):
        return True
    arg = argument(load, "f", 0)
    if arg is None or arg.star:
        return False
    expr, function = arg.value, ctx.enclosing_function()
    if type(expr) is cst.Name and function is not None:
        values = _path_bindings(function).get(expr.value, [])
        expr = values[0] if len(values) == 1 else expr
    from torchlint.static.walker import iter_nodes

    return any(type(inner) is cst.Call and _FETCHING.search(dotted_name(inner.func) or "") for inner in iter_nodes(expr))


def _latest_folder_writers(ctx, load: cst.Call) -> list[cst.Call]:
    """The calls of the latest earlier statement in the load's block that were handed the
    load's folder as the folder they write into (`output_dir=out_dir`); empty if none."""
    arg = argument(load, "f", 0)
    if arg is None or arg.star:
        return []
    folder = _folder_name(ctx, arg.value)
    if folder is None:
        return []
    statements, index = _enclosing_block(ctx)
    if statements is None:
        return []
    from torchlint.static.walker import iter_nodes

    # The latest step handed the folder decides: a download after a conversion brings new files.
    for statement in reversed(statements[:index]):
        writers = [
            inner
            for inner in iter_nodes(statement)
            if type(inner) is cst.Call
            and any(
                a.keyword is not None and _OUTPUT_KEYWORD.match(a.keyword.value) and type(a.value) is cst.Name and a.value.value == folder
                for a in inner.args
            )
        ]
        if writers:
            return writers
    return []


def _folder_name(ctx, expr: cst.BaseExpression) -> str | None:
    """`out_dir` for `out_dir / "model.pth"` or `os.path.join(out_dir, "model.pth")`, also
    through a local name assigned once."""
    function = ctx.enclosing_function()
    if type(expr) is cst.Name and function is not None:
        values = _path_bindings(function).get(expr.value, [])
        expr = values[0] if len(values) == 1 else expr
    if type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value == "str" and len(expr.args) == 1:
        expr = expr.args[0].value
    if type(expr) is cst.BinaryOperation and type(expr.operator) is cst.Divide:
        while type(expr) is cst.BinaryOperation and type(expr.operator) is cst.Divide:
            expr = expr.left
        return expr.value if type(expr) is cst.Name else None
    if type(expr) is cst.Call and expr.args and (dotted_name(expr.func) or "").endswith("path.join"):
        first = expr.args[0].value
        return first.value if type(first) is cst.Name else None
    return None


def model_class(ctx, name: str) -> str | None:
    """The class a local name is built from in the enclosing function: `m = Net(...)`,
    `m = Net(...).to(device)`. None when it has another binding or none."""
    function = ctx.enclosing_function()
    values = _path_bindings(function).get(name, []) if function is not None else []
    classes = set()
    for value in values:
        root = value
        while type(root) is cst.Call and type(root.func) is cst.Attribute and root.func.attr.value in _CHAINED:
            root = root.func.value
        if type(root) is cst.Call and type(root.func) is cst.Attribute and type(root.func.value) is cst.Name and root.func.value.value == name:
            continue  # `m = m.cpu()`: the same object
        if type(root) is not cst.Call:
            return None
        callee = dotted_name(root.func)
        if callee is None or not callee.rpartition(".")[2][:1].isupper():
            return None
        classes.add(callee.rpartition(".")[2])
    return classes.pop() if len(classes) == 1 else None


def loaded_into_model(ctx, load: cst.Call) -> str | None:
    """The class of the model a load's result is copied into in the same function:
    `net.load_state_dict(torch.load(p))`, or `sd = torch.load(p)` ... `net.load_state_dict(sd)`
    with `net = Net(...)`."""
    function = ctx.enclosing_function()
    if function is None:
        return None
    ancestors = ctx.ancestors
    target = None
    if ancestors and type(ancestors[-1]) is cst.Assign and len(ancestors[-1].targets) == 1 and type(ancestors[-1].targets[0].target) is cst.Name:
        target = ancestors[-1].targets[0].target.value
    for inner, argument_value in load_state_dict_calls(function.body):
        if type(inner.func.value) is not cst.Name:
            continue
        if argument_value is load or (target is not None and type(argument_value) is cst.Name and argument_value.value == target):
            return model_class(ctx, inner.func.value.value)
    return None


def load_state_dict_calls(scope: cst.CSTNode):
    """Each `x.load_state_dict(value, ...)` in `scope`, with its first argument's value."""
    from torchlint.static.walker import iter_nodes

    for node in iter_nodes(scope):
        if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "load_state_dict" and node.args:
            yield node, node.args[0].value


def holds_no_tensors(module: cst.Module, payload: cst.BaseExpression, scope: cst.CSTNode | None = None) -> bool:
    """A payload that is visibly not tensors: a numpy array, numbers, strings, a list, tuple
    or dict of those (displays or comprehensions), or a name every binding of which in
    `scope` (the saving function, else the module) is one of those."""
    return _TensorFree(module, scope).free(payload, {})


#: Calls whose result holds no tensors whatever their arguments (tensors become numpy or text).
_FREE_CALL_PREFIXES = ("np.", "numpy.", "json.")
_FREE_CALLS = frozenset({"str", "int", "float", "bool", "len", "repr", "Counter", "collections.Counter"})
#: Calls that hold no tensors when their arguments hold none.
_CONTAINER_CALLS = frozenset({"list", "dict", "tuple", "set", "sorted", "reversed", "enumerate", "zip", "range", "OrderedDict", "collections.OrderedDict"})
#: Tensor methods whose result is not a tensor.
_UNTENSOR_METHODS = frozenset({"numpy", "tolist", "item"})
#: Methods that put their arguments into the container they are called on.
_FILLING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "appendleft"})


class _TensorFree:
    """Is an expression visibly free of tensors? Names are followed through their bindings in
    the saving function (or at module level): every binding, and every `x.append(...)` /
    `x[k] = ...` that fills the container, must be free too. Dict keys are not judged (a
    checkpoint keyed by tensors is not a thing)."""

    def __init__(self, module: cst.Module, scope: cst.CSTNode | None) -> None:
        self.module = module
        self.scope = scope if scope is not None else module
        self._bindings: dict[int, dict[str, list[cst.BaseExpression | None]]] = {}
        self._params: dict[int, frozenset[str]] = {}
        self._names: dict[str, bool] = {}

    def free(self, node: cst.BaseExpression, local: dict[str, bool]) -> bool:
        """`local`: the comprehension variables in scope, each free when its iterable is."""
        kind = type(node)
        if kind in (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString):
            return True
        if kind in (cst.List, cst.Tuple, cst.Set):
            return all(self.free(e.value, local) for e in node.elements)
        if kind is cst.Dict:
            return all(self.free(e.value, local) for e in node.elements)  # `**other` too
        if kind in (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp):
            inner = self._comprehension_names(node, local)
            return self.free(node.value if kind is cst.DictComp else node.elt, inner)
        if kind is cst.Name:
            return self._name_free(node.value, local)
        if kind is cst.BinaryOperation or kind is cst.BooleanOperation:
            return self.free(node.left, local) and self.free(node.right, local)
        if kind is cst.UnaryOperation:
            return self.free(node.expression, local)
        if kind is cst.Comparison:
            return self.free(node.left, local) and all(self.free(c.comparator, local) for c in node.comparisons)
        if kind is cst.IfExp:
            return self.free(node.body, local) and self.free(node.orelse, local)
        if kind is cst.Subscript or kind is cst.Attribute:
            return self.free(node.value, local)  # an item or attribute of a tensor-free value
        if kind is cst.Call:
            return self._call_free(node, local)
        return False

    def _call_free(self, node: cst.Call, local) -> bool:
        func = node.func
        text = self.module.code_for_node(func)
        if text.startswith(_FREE_CALL_PREFIXES) or text in _FREE_CALLS:
            return True
        if text in _CONTAINER_CALLS:
            return all(self.free(arg.value, local) for arg in node.args)
        if type(func) is cst.Attribute:
            if func.attr.value in _UNTENSOR_METHODS:
                return True
            # A method of a tensor-free value (`counts.most_common()`, `d.items()`).
            return self.free(func.value, local)
        return False

    def _comprehension_names(self, node, local):
        """The names a comprehension's `for` clauses bind, each free when its iterable is
        (`[t.tolist() for t in tensors]` is free all the same)."""
        inner = dict(local)
        clause = node.for_in
        while clause is not None:
            iterable_free = self.free(clause.iter, inner)
            for name in _names_in(clause.target):
                inner[name] = iterable_free
            clause = clause.inner_for_in
        return inner

    def _name_free(self, name: str, local) -> bool:
        if name in local:
            return local[name]  # a comprehension variable
        if name in ("None", "True", "False"):
            return True
        known = self._names.get(name)
        if known is not None:
            return known
        self._names[name] = True  # while its bindings are read: the others decide
        scope = self.scope
        if type(scope) is cst.FunctionDef and name not in self._scope_bindings(scope) and name not in self._scope_params(scope):
            scope = self.module  # a global read in the function
        free = self._bound_free(scope, name)
        self._names[name] = free
        return free

    def _bound_free(self, scope: cst.CSTNode, name: str) -> bool:
        if type(scope) is cst.FunctionDef and name in self._scope_params(scope):
            return False  # a parameter: whatever the caller passes
        bindings = self._scope_bindings(scope).get(name)
        if not bindings or any(how == _UNKNOWN for how, _ in bindings):
            return False  # not bound here (an import, a builtin), or bound to what we cannot see
        assigned = [value for how, value in bindings if how != _FILLED]
        if assigned and all(type(v) is cst.Call and self.module.code_for_node(v.func) in _COUNTERS for v in assigned):
            return True  # a Counter counts hashable labels, whatever fills it
        return all(self.free(value, {}) for _, value in bindings)

    def _scope_params(self, function: cst.FunctionDef) -> frozenset[str]:
        found = self._params.get(id(function))
        if found is None:
            params = function.params
            found = frozenset(
                p.name.value
                for p in (*params.posonly_params, *params.params, *params.kwonly_params, params.star_arg, params.star_kwarg)
                if type(p) is cst.Param
            )
            self._params[id(function)] = found
        return found

    def _scope_bindings(self, scope: cst.CSTNode) -> dict[str, list[tuple[str, cst.BaseExpression | None]]]:
        """name -> (how, expression) for each binding of the scope and each call or item
        assignment filling it: how is _ASSIGNED (the value, or a part of it when unpacked),
        _FILLED (`x.append(v)`, `x[k] = v`: v), _ELEMENT (a `for` target: an element of the
        expression) or _UNKNOWN (`with ... as x`, an import, a def)."""
        found = self._bindings.get(id(scope))
        if found is not None:
            return found
        from torchlint.static.walker import iter_nodes

        found = {}
        body = scope.body if type(scope) is cst.FunctionDef else scope
        nested = (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)
        for node in iter_nodes(body, skip=nested):
            kind = type(node)
            if kind is cst.Assign:
                for target in node.targets:
                    _bind(found, target.target, _ASSIGNED, node.value)
            elif kind is cst.AnnAssign and node.value is not None:
                _bind(found, node.target, _ASSIGNED, node.value)
            elif kind is cst.AugAssign or kind is cst.NamedExpr:
                _bind(found, node.target, _ASSIGNED, node.value)
            elif kind is cst.For:
                _bind(found, node.target, _ELEMENT, node.iter)
            elif kind is cst.AsName:
                _bind(found, node.name, _UNKNOWN, None)
            elif kind in (cst.FunctionDef, cst.ClassDef) and node is not scope:
                found.setdefault(node.name.value, []).append((_UNKNOWN, None))
            elif kind is cst.Call and type(node.func) is cst.Attribute and type(node.func.value) is cst.Name:
                if node.func.attr.value in _FILLING_METHODS:
                    for arg in node.args:
                        found.setdefault(node.func.value.value, []).append((_FILLED, arg.value))
        self._bindings[id(scope)] = found
        return found


_ASSIGNED, _FILLED, _ELEMENT, _UNKNOWN = "assigned", "filled", "element", "unknown"
_COUNTERS = frozenset({"Counter", "collections.Counter"})


def _bind(found: dict, target: cst.BaseExpression, how: str, value) -> None:
    kind = type(target)
    if kind is cst.Name:
        found.setdefault(target.value, []).append((how, value))
    elif kind in (cst.Tuple, cst.List):
        for element in target.elements:
            # Unpacking: each name gets part of the value, free when the value is.
            _bind(found, element.value, how, value)
    elif kind is cst.StarredElement:
        _bind(found, target.value, how, value)
    elif kind is cst.Subscript and type(target.value) is cst.Name:
        found.setdefault(target.value.value, []).append((_FILLED, value))  # `x[k] = v` fills x


def _names_in(target: cst.BaseExpression) -> list[str]:
    kind = type(target)
    if kind is cst.Name:
        return [target.value]
    if kind in (cst.Tuple, cst.List):
        return [name for element in target.elements for name in _names_in(element.value)]
    if kind is cst.StarredElement:
        return _names_in(target.value)
    return []


def is_main_guard(node: cst.If) -> bool:
    """`if __name__ == "__main__":`"""
    test = node.test
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return False
    sides = [test.left, test.comparisons[0].comparator]
    names = [s.value for s in sides if type(s) is cst.Name]
    strings = [s.evaluated_value for s in sides if type(s) is cst.SimpleString]
    return names == ["__name__"] and strings == ["__main__"]


_ACCELERATOR_FLAGS = frozenset({"cuda", "use_cuda", "use_gpu", "on_gpu", "is_cuda", "has_cuda"})


def availability_guarded(ancestors: list[cst.CSTNode]) -> bool:
    """Inside the accelerator arm of `if torch.cuda.is_available(): ... else: ...` (the else
    arm loads for the CPU), or of a `use_cuda` / `args.cuda` flag with an else."""
    for index, node in enumerate(ancestors[:-1]):
        if type(node) is cst.If and node.orelse is not None and ancestors[index + 1] is node.body and _accelerator_test(node.test):
            return True
    return False


def _accelerator_test(test: cst.BaseExpression) -> bool:
    if type(test) is cst.Call and type(test.func) is cst.Attribute:
        return test.func.attr.value == "is_available"
    if type(test) is cst.Attribute:
        return test.attr.value in _ACCELERATOR_FLAGS
    if type(test) is cst.Name:
        return test.value in _ACCELERATOR_FLAGS
    return False


# -- where the code that writes or reads a checkpoint runs ---------------------------------

#: A file that names any of these has a way to run without an accelerator, or runs on
#: several (where a checkpoint's device index matters): it is not CUDA-only by construction.
_CPU_OR_MULTI_DEVICE = re.compile(
    r"""is_available|device_count|["']cpu["']|\bmps\b|xla|xpu|accelerator|local_rank|LOCAL_RANK|set_device"""
    r"|init_process_group|DistributedDataParallel|DataParallel|\bdevice_ids\b"
)
#: An `if` or conditional expression whose test speaks of the device chooses one.
_DEVICE_CHOICE = re.compile(r"cuda|gpu|device", re.I)


def cuda_only_script(ctx) -> bool:
    """The file is a script (it has a `__main__` block, or statements at module level that
    place things on the GPU) that runs on one CUDA device or not at all: it moves things with
    `.cuda()` or names a `"cuda"`/`"cuda:0"` device, never conditionally, and names no CPU
    fallback, no other accelerator and no second device. A `torch.load` there runs where a
    GPU is, as the run that saved the file did. (A library module's functions are called from
    code this file does not show, which may run anywhere.)"""
    text = ctx.text
    if "cuda" not in text or _CPU_OR_MULTI_DEVICE.search(text):
        return False
    if "__main__" not in text and not any(
        "cuda" in ctx.module.code_for_node(statement)
        for statement in ctx.module.body
        if type(statement) not in (cst.FunctionDef, cst.ClassDef)
    ):
        return False
    from torchlint.static.walker import iter_nodes

    module = ctx.module
    placed = False
    for node in iter_nodes(module):
        kind = type(node)
        if kind is cst.If or kind is cst.IfExp:
            if _DEVICE_CHOICE.search(module.code_for_node(node.test)):
                return False  # `if args.cuda:` / `"cuda" if use_gpu else ...`: a CPU path exists
        elif kind is cst.Param or (kind is cst.Arg and node.keyword is not None and node.keyword.value == "default"):
            default = node.default if kind is cst.Param else node.value
            if type(default) is cst.SimpleString and "cuda" in default.value:
                return False  # `device="cuda"` as a default: the caller or the command line may choose
        elif kind is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "cuda":
            placed = True
        elif kind is cst.SimpleString and node.value.strip("'\"rbuRBU").startswith("cuda"):
            placed = True
    return placed


#: A test that speaks of choosing a device (`torch.cuda.is_available()`, `args.cuda`, `use_gpu`).
_DEVICE_TEST = re.compile(r"cuda|gpu|device|accelerat|is_available|\bmps\b", re.I)
#: What an availability test must name to be about devices (not `torch.distributed.is_available()`).
_NAMES_A_DEVICE = re.compile(r"cuda|gpu|accelerat|\bmps\b", re.I)
#: Command-line options that switch the accelerator on or off: either way, a CPU run exists.
_DEVICE_OPTIONS = re.compile(r"^-*(?:no[-_]?(?:cuda|gpu|accel\w*)|cpu|use[-_]?(?:cuda|gpu|cpu)|cuda|gpu|disable[-_](?:cuda|gpu))$")


def offers_a_cpu_path(ctx) -> bool:
    """The file runs on the CPU too, by its own choice: it picks its device with a CPU arm
    (`"cuda" if torch.cuda.is_available() else "cpu"`, `if ...: device = torch.device("cpu")`),
    places things only under an accelerator test or flag (`if args.cuda:`,
    `if torch.cuda.is_available():`), or takes a command-line option that turns the
    accelerator off or on (`--no-cuda`, `--cpu`, `--cuda`). A checkpoint another run wrote
    on a GPU is then read where there may be none. (`if not torch.cuda.is_available():` is
    no such choice: it usually refuses to run.)"""
    from torchlint.static.walker import iter_nodes

    module = ctx.module
    for node in iter_nodes(module):
        kind = type(node)
        if kind is cst.IfExp:
            if (_is_cpu_device(node.body) or _is_cpu_device(node.orelse)) and _DEVICE_TEST.search(module.code_for_node(node.test)):
                return True
        elif kind is cst.If:
            test = module.code_for_node(node.test)
            if _DEVICE_TEST.search(test) and (_accelerator_test(node.test) and _NAMES_A_DEVICE.search(test) or _assigns_cpu_device(node)):
                return True
        elif kind is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "add_argument":
            if any(type(arg.value) is cst.SimpleString and isinstance(option := arg.value.evaluated_value, str)
                   and _DEVICE_OPTIONS.match(option) for arg in node.args if arg.keyword is None):
                return True
    return False


def _is_cpu_device(expr: cst.BaseExpression) -> bool:
    """`"cpu"` or `torch.device("cpu")`."""
    if type(expr) is cst.SimpleString:
        return expr.evaluated_value == "cpu"
    if type(expr) is cst.Call and dotted_name(expr.func) in ("torch.device", "device") and expr.args:
        return _is_cpu_device(expr.args[0].value)
    return False


def _assigns_cpu_device(node: cst.If) -> bool:
    """An arm of this `if` (or of its `elif`/`else` chain) assigns a CPU device."""
    arms = [node.body]
    orelse = node.orelse
    while orelse is not None:
        if type(orelse) is cst.If:
            arms.append(orelse.body)
            orelse = orelse.orelse
        else:
            arms.append(orelse.body)
            orelse = None
    for arm in arms:
        lines = arm.body if type(arm) is cst.IndentedBlock else (arm,)  # `if c: x = 1` is a suite
        for line in lines:
            if type(line) not in (cst.SimpleStatementLine, cst.SimpleStatementSuite):
                continue  # a nested block chooses for itself; its own `if` is visited too
            for statement in line.body:
                if type(statement) in (cst.Assign, cst.AnnAssign) and statement.value is not None and _is_cpu_device(statement.value):
                    return True
    return False


def maps_another_load(ctx, names) -> bool:
    """Another `torch.load` of the same file passes `map_location`: its authors read
    checkpoints on other devices than the ones that wrote them."""
    from torchlint.static.walker import iter_nodes

    return any(
        type(node) is cst.Call and names.qualname(node.func) in LOAD_FUNCTIONS and argument(node, "map_location", 1) is not None
        for node in iter_nodes(ctx.module)
    )


# -- questions about one load or save call --------------------------------------------------

#: torch.distributed state-dict configurations that can gather tensors to the CPU.
_STATE_DICT_CONFIGS = frozenset(
    {"FullStateDictConfig", "FullOptimStateDictConfig", "ShardedStateDictConfig", "ShardedOptimStateDictConfig", "StateDictOptions"}
)


def saved_in_same_function(ctx, names, node: cst.Call) -> bool:
    """`torch.save(obj, buffer)` ... `torch.load(buffer)` in one function."""
    source = argument(node, "f", 0)
    function = ctx.enclosing_function()
    if source is None or function is None or type(source.value) is not cst.Name:
        return False
    target = source.value.value
    from torchlint.static.walker import iter_nodes

    for inner in iter_nodes(function.body):
        if type(inner) is cst.Call and names.qualname(inner.func) in SAVE_FUNCTIONS:
            written = argument(inner, "f", 1)
            if written is not None and type(written.value) is cst.Name and written.value.value == target:
                return True
    return False


def offloads_state_to_cpu(ctx) -> bool:
    """The file configures its distributed state dicts with CPU offload
    (`FullStateDictConfig(offload_to_cpu=True)`, `StateDictOptions(cpu_offload=True)`):
    the checkpoints its code writes, and reads back, hold CPU tensors."""
    if "offload" not in ctx.text:
        return False
    from torchlint.static.walker import iter_nodes

    for inner in iter_nodes(ctx.module):
        if type(inner) is cst.Call and (dotted_name(inner.func) or "").rpartition(".")[2] in _STATE_DICT_CONFIGS:
            for arg in inner.args:
                keyword = arg.keyword.value if arg.keyword is not None else None
                if keyword in ("offload_to_cpu", "cpu_offload") and type(arg.value) is cst.Name and arg.value.value == "True":
                    return True
    return False


def cache_of_this_code(ctx, names, node: cst.Call) -> bool:
    """`if os.path.exists(p): x = torch.load(p) else: x = compute(); torch.save(x, p)` (or
    the arms the other way round): the file is a cache this code writes on the machine
    that reads it."""
    loaded = path_text(ctx.module, node, "f", 0)
    if loaded is None:
        return False
    from torchlint.static.walker import iter_nodes

    ancestors = ctx.ancestors
    for index, statement in enumerate(ancestors[:-1]):
        if type(statement) is not cst.If or statement.orelse is None:
            continue
        arm = ancestors[index + 1]
        other = statement.orelse if arm is statement.body else statement.body if arm is statement.orelse else None
        if other is None or loaded not in ctx.module.code_for_node(statement.test):
            continue
        for inner in iter_nodes(other):
            if type(inner) is cst.Call and names.qualname(inner.func) in SAVE_FUNCTIONS:
                if path_text(ctx.module, inner, "f", 1) == loaded:
                    return True
    return False


def is_accelerator_save(node: cst.Call) -> bool:
    """`accelerator.save(obj, path)`: accelerate's `Accelerator.save` is `torch.save` run on
    the main process, with torch.save's argument order."""
    func = node.func
    return (
        type(func) is cst.Attribute
        and func.attr.value == "save"
        and type(func.value) is cst.Name
        and func.value.value == "accelerator"
        and len(node.args) >= 2
    )


# -- the project phase: the facts a rule recorded for its loads and saves ------------------
#
# A rule records, per file and under its own code, a "load" fact for each load it reports
# (line, column, path text, file-name pattern, model class, CUDA-only script) and a "save"
# fact for each save (the same, plus whether the payload holds tensors and whether they are
# surely on the CPU). These questions join them across the files of one project.


def load_fact_at(project, finding, code: str) -> dict | None:
    """The load fact the rule `code` recorded at `finding`'s position, if any."""
    loads = project.facts.get(finding.path, {}).get(code, {}).get("load", [])
    at = (finding.location.line, finding.location.column)
    return next((f for f in loads if (f["line"], f["column"]) == at), None)


def saves_in_project(project, path: str, code: str) -> list[dict]:
    """Every save fact the rule `code` recorded in the files of `path`'s project."""
    return facts_in_project(project, path, code, "save")


def facts_in_project(project, path: str, code: str, kind: str, with_file: bool = False) -> list:
    """Every fact of `kind` the rule `code` recorded in the files of `path`'s project (as
    (file, fact) pairs with `with_file`)."""
    root = project.roots.get(path, "")
    return [
        (other, fact) if with_file else fact
        for other, facts in project.facts.items()
        if project.roots.get(other, "") == root
        for fact in facts.get(code, {}).get(kind, [])
    ]


def writers_of(load: dict, saves: list[dict]) -> list[dict]:
    """The saves that write the file `load` reads: the same path text; else the same file
    name written to another folder (the script that prepares `destination / "train.pt"` and
    the one that reads `data_dir / "train.pt"`); else weights of the same model class
    (`style_model = TransformerNet()` loads what training saved from `transformer =
    TransformerNet()`)."""
    found = [fact for fact in saves if load["path"] is not None and fact["path"] == load["path"]]
    if not found and load.get("name") is not None:
        found = [fact for fact in saves if fact.get("name") == load["name"]]
    if not found and load.get("model") is not None:
        found = [fact for fact in saves if fact.get("model") == load["model"]]
    return found


def writes_only_cpu_checkpoints(saves: list[dict]) -> bool:
    """Does every writer of the project that may store tensors store them on the CPU (a
    model moved there first, or code that never speaks of devices), with at least one such
    writer? Then a file the project wrote holds CPU tensors whichever of its writers made
    it, and a load that no save matches by path, name or model class reads, if this
    project's checkpoint at all, CPU tensors. A writer this model cannot read (a helper
    saving whatever its callers pass, `fabric.save`, `torch.save(*args)`) may store tensors
    from any device: one of them keeps the answer False."""
    tensors = [save for save in saves if save["tensors"]]
    return bool(tensors) and all(save.get("cpu") for save in tensors)


def written_by_this_process(ctx, names, load: cst.Call) -> bool:
    """The file `load` reads is one this run wrote on this machine: saved earlier in the same
    function, under a temporary directory it made, into the folder an earlier step of the block
    was handed to write into, or a local cache the other arm of its existence check saves. Its
    devices exist here, and it is as trusted as the code itself."""
    if saved_in_same_function(ctx, names, load):
        return True
    source = argument(load, "f", 0)
    if source is not None and in_temp_dir(ctx, ctx.enclosing_function(), source.value):
        return True
    return written_by_earlier_step(ctx, load) or cache_of_this_code(ctx, names, load)


def saved_here_by_this_code(ctx, names, load: cst.Call) -> bool:
    """The code that loads the file also saves it, and every such save writes plain
    containers of tensors (`_plain_payload`): a cache or a round trip of its own, as trusted
    as the code, which torch >= 2.6's `weights_only` loader reads too. "The code" is the
    loading function (or, at module level, the module) and, for a method, the other methods
    of its class, for a module-level function the function of its module named for it
    (`_named_as_pair`): a `save(path)` / `load(path)` pair, a checkpoint hook writing what its
    loader reads. A save matches by the same path expression, or by the same spelled file
    name (`path / "sampler.pt"` and `Path(path) / "sampler.pt"`). A parameter saved and read
    back (a broadcast of an arbitrary object through a buffer) or an instance of some class
    may not be plain: from torch 2.6 its bare `torch.load` refuses what is not allowlisted."""
    loaded = path_text(ctx.module, load, "f", 0)
    function = ctx.enclosing_function()
    if loaded is None or (function is not None and "pretrained" in function.name.value) or fetched_from_elsewhere(ctx, load):
        return False  # `from_pretrained` and downloads read files made elsewhere, whoever made them first
    loaded_name = file_name_pattern(ctx, load, "f", 0)
    loaded_folders = _folder_names(argument(load, "f", 0).value)
    from torchlint.static.walker import iter_nodes

    scopes = [(function.body, function)] if function is not None else [(ctx.module, None)]
    owner = ctx.enclosing_class() if function is not None else None
    if owner is not None:
        scopes += [(method.body, method) for method in owner.body.body if type(method) is cst.FunctionDef and method is not function]
    elif function is not None and any(statement is function for statement in ctx.module.body):
        # a module-level loader and the saver named for it (`_scheduler_saver` and
        # `_scheduler_loader`, hooks registered together); not any saver of the module: a
        # checkpoint module's generic loader also reads what other runs published
        scopes += [(other.body, other) for other in ctx.module.body
                   if type(other) is cst.FunctionDef and other is not function and _named_as_pair(other.name.value, function.name.value)]
    payloads = []
    for scope, saver in scopes:
        parameters = {param.name.value for param in _all_params(saver)} if saver is not None else set()
        for call in iter_nodes(scope):
            if type(call) is not cst.Call or names.qualname(call.func) not in SAVE_FUNCTIONS:
                continue
            written = argument(call, "f", 1)
            if written is None or written.star:
                continue
            spelled = _spelled_name(written.value)
            same_name = (loaded_name is not None and spelled is not None and spelled.rpartition("/")[2] == loaded_name
                         and bool(loaded_folders & _folder_names(written.value)))  # the same folder name too
            if path_text(ctx.module, call, "f", 1) == loaded or same_name:
                payloads.append((argument(call, "obj", 0), scope, parameters))
    if not payloads or any(payload is None or payload.star for payload, _, _ in payloads):
        return False
    return all(_plain_payload(ctx, names, payload.value, scope, parameters, owner) for payload, scope, parameters in payloads)


_SAVE_OR_LOAD_WORD = re.compile(r"(?:save|load|dump|store|restore|write|read)(?:r|er|s)?", re.I)


def _named_as_pair(saver: str, loader: str) -> bool:
    """`_lr_saver` / `_lr_loader`, `save_state` / `load_state`: the same name but for the
    save and load words."""
    return saver != loader and _SAVE_OR_LOAD_WORD.sub("*", saver) == _SAVE_OR_LOAD_WORD.sub("*", loader)


#: Names in a path that are not its folder (`os.path.join`, `Path(...)`, `str(...)`).
_PATH_HELPERS = frozenset({"os", "osp", "Path", "PurePath", "pathlib", "str", "self"})


def _folder_names(expr: cst.BaseExpression) -> set[str]:
    """The names a path expression is built from (`folder` in `Path(folder) / "x.pt"`)."""
    from torchlint.static.walker import iter_nodes

    nodes = list(iter_nodes(expr))
    attributes = {id(node.attr) for node in nodes if type(node) is cst.Attribute}  # `.path`, `.join`
    return {node.value for node in nodes if type(node) is cst.Name and id(node) not in attributes} - _PATH_HELPERS


#: Dict/list/tuple/set displays and comprehensions, by class name: touching `cst.Dict` at
#: import would load libcst for every run, also those that parse nothing.
_DISPLAYS = frozenset({"Dict", "List", "Tuple", "Set", "DictComp", "ListComp", "SetComp"})


def _plain_payload(ctx, names, value: cst.BaseExpression, scope: cst.CSTNode, parameters: set[str],
                   owner: cst.ClassDef | None = None) -> bool:
    """A state dict, a dict/list/tuple display or comprehension, or a local name bound only to
    those or to torch calls (`cache = {}` filled item by item, `x = torch.load(...)`), or an
    attribute of `self` that every method of the class binds only so (`self.alignments = {}`
    filled by index, restored by `torch.load`): the containers and tensors weights_only reads.
    Not a parameter (any object a caller passes), nor an instance of some class
    (`argparse.Namespace(...)`), which it refuses."""
    if _is_state_dict(value) or type(value).__name__ in _DISPLAYS:
        return True
    if owner is not None and _is_self_attribute(value):
        bound = _values_bound_to(owner.body, lambda target: _is_self_attribute(target, value.attr.value))
    elif type(value) is not cst.Name or value.value in parameters:
        return False
    else:
        bound = _values_bound_to(scope, lambda target: type(target) is cst.Name and target.value == value.value)
    return bool(bound) and all(
        type(expr).__name__ in _DISPLAYS or _is_state_dict(expr)
        or (type(expr) is cst.Call and (names.qualname(expr.func) or "").startswith("torch."))
        for expr in bound
    )


def from_the_package(ctx, load: cst.Call) -> bool:
    """The path is built from the module's own `__file__` (`Path(__file__).parent / "weights"`,
    also through names the function assigns): a file shipped inside the package, as trusted as
    the installed code beside it."""
    source = argument(load, "f", 0)
    if source is None:
        return False
    from torchlint.static.walker import iter_nodes

    def mentions_file(node: cst.CSTNode) -> bool:
        return any(type(inner) is cst.Name and inner.value == "__file__" for inner in iter_nodes(node))

    if mentions_file(source.value):
        return True
    used = {node.value for node in iter_nodes(source.value) if type(node) is cst.Name}
    function = ctx.enclosing_function()
    for node in iter_nodes(function.body if function is not None else ctx.module):
        if type(node) is cst.Assign and any(type(t.target) is cst.Name and t.target.value in used for t in node.targets):
            if mentions_file(node.value):
                return True
    return False


def _all_params(function: cst.FunctionDef) -> list[cst.Param]:
    params = function.params
    extra = [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
    return [*params.posonly_params, *params.params, *params.kwonly_params, *extra]


def _values_bound_to(scope: cst.CSTNode, is_target) -> list[cst.BaseExpression]:
    """The values every `target = value` / `target: T = value` in `scope` binds to a target
    `is_target` accepts."""
    from torchlint.static.walker import iter_nodes

    bound = []
    for node in iter_nodes(scope):
        if type(node) is cst.Assign and any(is_target(t.target) for t in node.targets):
            bound.append(node.value)
        elif type(node) is cst.AnnAssign and node.value is not None and is_target(node.target):
            bound.append(node.value)
    return bound


def _is_self_attribute(expr: cst.BaseExpression, attr: str | None = None) -> bool:
    """`self.<attr>` (any attribute without `attr`)."""
    return (type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.value.value == "self"
            and (attr is None or expr.attr.value == attr))


def _is_state_dict(value: cst.BaseExpression) -> bool:
    return type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value == "state_dict"
