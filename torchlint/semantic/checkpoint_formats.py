"""Which checkpoint format a load reads and a save writes: the string keys of the dict.

A load whose path matches no save (a `--checkpoint` argument, a hard-coded cluster path) can
still name its writer by what it reads: `state["model"]`, `state["args"]` are keys of the dict
that fairseq's `Trainer.save_checkpoint` writes, after `utils.move_to_cpu(self.state_dict())`,
through the helper `checkpoint_utils.torch_persistent_save(state_dict, filename)`. When every
writer of the project whose known keys hold all the keys a load reads stores CPU tensors, the
file that load reads was, if the project wrote it at all, written on the CPU.

One key is no signature ("model" and "state_dict" are in nearly every checkpoint, a
downloaded one included); a load must read at least `MIN_KEYS` of one writer's keys.

Three kinds of per-file fact feed the project phase (`format_writers`):

* a save whose payload's keys are known (`torch.save({"model": ..., "epoch": e}, p)`, a name
  bound once to such a dict, `move_to_cpu(...)` of one, `self.state_dict()` of a method that
  returns one) carries `keys` in its "save" fact;
* a helper that saves one of its parameters (`def _save(obj, f): torch.save(obj, f)`), or
  hands it on to another saving helper (`torch_persistent_save(obj, f)` calls `_save(obj, h)`):
  "save_helper" and "save_forward" facts;
* a call of a saving helper (named `save`, `save_*`, `*_save`) with such a payload:
  "format_call" facts, matched to the helpers by the callee's name.
"""

from __future__ import annotations

import libcst as cst

from torchlint.semantic.name_uses import literal_string as _string, module_functions, scope_uses
from torchlint.semantic.name_uses import subscript_key as _subscript_key
from torchlint.static.walker import iter_nodes

#: The fewest keys a load must read for its keys to name a format.
MIN_KEYS = 2

#: Functions that return their argument with every tensor moved to the CPU (fairseq's
#: `utils.move_to_cpu`).
CPU_WRAPPERS = frozenset({"move_to_cpu"})


#: How many names, wrappers and methods `_payload_keys` follows to reach a dict.
_MAX_DEPTH = 6


def _callee_name(call: cst.Call) -> str | None:
    func = call.func
    if type(func) is cst.Attribute:
        return func.attr.value
    return func.value if type(func) is cst.Name else None


def positional_params(function: cst.FunctionDef) -> list[str]:
    """The positional parameter names of `function`, less a method's `self`/`cls`."""
    names = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    return names[1:] if names and names[0] in ("self", "cls") else names


# -- what a load reads -----------------------------------------------------------------------
def keys_read(ctx, load: cst.Call) -> list[str]:
    """The string keys read off what `load` returns: `torch.load(p)["k"]`; after `x =
    torch.load(p)`, `x["k"]`, `"k" in x` and `x.get("k")` in the same scope, and the same reads
    of the parameter of a function of this module that `x` is handed to (`update(x)`)."""
    ancestors = ctx.ancestors
    functions = module_functions(ctx)
    if ancestors and type(ancestors[-1]) is cst.Subscript and ancestors[-1].value is load:
        key = _subscript_key(ancestors[-1])
        return [key] if key is not None else []
    if len(ancestors) >= 2 and type(ancestors[-1]) is cst.Arg and type(ancestors[-2]) is cst.Call:
        return sorted(_reads_in_callee(ctx, ancestors[-2], ancestors[-1], functions))  # `upgrade(torch.load(p))`
    if not ancestors or type(ancestors[-1]) is not cst.Assign or len(ancestors[-1].targets) != 1:
        return []
    target = ancestors[-1].targets[0].target
    if type(target) is not cst.Name:
        return []
    uses = scope_uses(ctx, ctx.enclosing_function() or ctx.module)
    keys = set(uses.keys.get(target.value, ()))
    for call, arg in uses.passed.get(target.value, ()):
        if call.func.value in functions:
            keys |= _reads_in_callee(ctx, call, arg, functions)
    return sorted(keys)


def _reads_in_callee(ctx, call: cst.Call, arg: cst.Arg, functions: dict[str, cst.FunctionDef]) -> set[str]:
    """The keys a function of this module reads off the parameter that `arg` of `call` binds."""
    if type(call.func) is not cst.Name or call.func.value not in functions or arg.keyword is not None or arg.star:
        return set()
    callee = functions[call.func.value]
    params = [p.name.value for p in (*callee.params.posonly_params, *callee.params.params)]
    positional = [a for a in call.args if a.keyword is None and not a.star]
    index = next((i for i, a in enumerate(positional) if a is arg), len(params))
    return set(scope_uses(ctx, callee).keys.get(params[index], ())) if index < len(params) else set()


# -- what a save writes ----------------------------------------------------------------------
def payload_format(ctx, payload: cst.BaseExpression) -> tuple[list[str] | None, bool]:
    """The keys of the dict `payload` evaluates to (None when unknown), and whether a CPU
    wrapper (`move_to_cpu(...)`) moved its tensors to the CPU."""
    scope = ctx.enclosing_function() or ctx.module
    keys, cpu = _payload_keys(ctx, payload, scope, 0)
    return (sorted(keys) if keys else None), cpu


def _payload_keys(ctx, expr: cst.BaseExpression, scope: cst.CSTNode, depth: int) -> tuple[set[str] | None, bool]:
    if depth > _MAX_DEPTH:
        return None, False
    kind = type(expr)
    if kind is cst.Dict:
        keys = {_string(e.key) for e in expr.elements if type(e) is cst.DictElement}
        keys.discard(None)
        return (keys or None), False
    if kind is cst.Name:
        values = _assigned_values(expr.value, scope)
        if len(values) != 1:
            return None, False  # bound more than once (or a parameter): not one dict
        keys, cpu = _payload_keys(ctx, values[0], scope, depth + 1)
        return (keys | _assigned_keys(expr.value, scope) if keys is not None else None), cpu
    if kind is cst.Call:
        name = _callee_name(expr)
        if name in CPU_WRAPPERS and expr.args:
            return _payload_keys(ctx, expr.args[0].value, scope, depth + 1)[0], True
        func = expr.func
        if type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self" and not expr.args:
            return _method_keys(ctx, func.attr.value, depth), False
    return None, False


def _method_keys(ctx, method: str, depth: int) -> set[str] | None:
    """The keys of the dict `self.<method>()` returns: the method of the enclosing class whose
    every `return` gives a name bound once to a dict (or a dict itself)."""
    klass = ctx.enclosing_class()
    if klass is None:
        return None
    for statement in klass.body.body:
        if type(statement) is cst.FunctionDef and statement.name.value == method:
            returns = [r.value for r in iter_nodes(statement) if type(r) is cst.Return and r.value is not None]
            found = [_payload_keys(ctx, value, statement, depth + 1)[0] for value in returns]
            if not found or any(keys is None for keys in found):
                return None
            return set().union(*found)
    return None


def _assigned_values(name: str, scope: cst.CSTNode) -> list[cst.BaseExpression]:
    """Every value assigned to `name` in `scope` (a parameter counts as one unknown value)."""
    values: list[cst.BaseExpression] = []
    if type(scope) is cst.FunctionDef:
        params = scope.params
        if any(p.name.value == name for p in (*params.posonly_params, *params.params, *params.kwonly_params)):
            values.append(cst.Name(name))  # a parameter: what callers pass
    for inner in iter_nodes(scope):
        if type(inner) is cst.Assign:
            for target in inner.targets:
                if type(target.target) is cst.Name and target.target.value == name:
                    values.append(inner.value)
        elif type(inner) in (cst.AnnAssign, cst.AugAssign) and type(inner.target) is cst.Name and inner.target.value == name:
            values.append(inner.value or cst.Name(name))
    return values


def _assigned_keys(name: str, scope: cst.CSTNode) -> set[str]:
    """Keys added by `name["k"] = ...` in `scope`."""
    keys: set[str] = set()
    for inner in iter_nodes(scope):
        if type(inner) is cst.Assign:
            for target in inner.targets:
                subscript = target.target
                if type(subscript) is cst.Subscript and type(subscript.value) is cst.Name and subscript.value.value == name:
                    key = _subscript_key(subscript)
                    if key is not None:
                        keys.add(key)
    return keys


# -- the project phase -----------------------------------------------------------------------
def format_writers(keys: list[str], facts_of) -> list[tuple[str, dict]]:
    """The writers of the project whose known keys hold every key in `keys`, as (file, fact):
    saves with such a payload, and calls passing one to a helper that saves it.
    `facts_of(kind)` lists the rule's (file, fact) pairs of that kind across the project."""
    wanted = set(keys)
    helpers = {(fact["function"], fact["param"]) for _, fact in facts_of("save_helper")}
    forwards = [fact for _, fact in facts_of("save_forward")]
    grew = True
    while grew:  # a helper handing its parameter to a saving helper saves it too
        grew = False
        for fact in forwards:
            pair = (fact["function"], fact["param"])
            if (fact["callee"], fact["arg"]) in helpers and pair not in helpers:
                helpers.add(pair)
                grew = True
    writers = [(file, save) for file, save in facts_of("save") if save.get("keys") and wanted <= set(save["keys"])]
    writers += [
        (file, call)
        for file, call in facts_of("format_call")
        if (call["callee"], call["arg"]) in helpers and wanted <= set(call["keys"])
    ]
    return writers


def stores_cpu_tensors(file: str, writer: dict, files_loading_unmapped: set[str]) -> bool:
    """Does `writer` store CPU tensors (or none)? Moved there (`move_to_cpu`, `.cpu()`), or
    written by code that never speaks of devices — unless its file also loads checkpoints
    without `map_location`: it may be saving again what it loaded, on the loaded devices."""
    if not writer["tensors"] or writer.get("moved"):
        return True
    return bool(writer.get("cpu")) and file not in files_loading_unmapped
