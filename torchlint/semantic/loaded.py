"""What the code does with the value a `torch.load` call returns, asked at the call while the
engine visits it (`ctx.ancestors` ends at the call's parent): is it only read as numpy, does
an annotation say it holds no tensors, is it copied into a model's own tensors
(`load_state_dict`), does the code say it is model state, and which device name the
enclosing function offers for a fix.
"""

from __future__ import annotations

import re

import libcst as cst

from torchlint.semantic.name_uses import is_numpy_call, scope_uses
from torchlint.static.names import dotted_name


def read_as_numpy(ctx, node: cst.Call) -> bool:
    """`torch.from_numpy(torch.load(p))`, or `x = torch.load(p)` whose every later read in
    the scope is inside `torch.from_numpy(...)` or a numpy call: the file holds numpy
    arrays, which have no device."""
    ancestors = ctx.ancestors
    if len(ancestors) >= 2 and type(ancestors[-1]) is cst.Arg and is_numpy_call(ctx, ancestors[-2]):
        return True
    if not ancestors or type(ancestors[-1]) is not cst.Assign or len(ancestors[-1].targets) != 1:
        return False
    target = ancestors[-1].targets[0].target
    if type(target) is not cst.Name:
        return False
    # The reads of this binding: from the assignment to the next one of the same name
    # (whose value still reads this one), in source order.
    uses = scope_uses(ctx, ctx.enclosing_function() or ctx.module).after(ancestors[-1], target.value)
    reads = [use for use in uses if use.kind == "name" and use.node is not target]
    return bool(reads) and sum(use.numpy_calls for use in reads) == len(reads)


def annotated_tensor_free(ctx) -> bool:
    """`return torch.load(p)` in a function annotated `-> dict[str, int]`, or
    `x: list[str] = torch.load(p)`: the annotation says what the file holds, and it
    holds no tensors."""
    ancestors = ctx.ancestors
    if not ancestors:
        return False
    parent = ancestors[-1]
    if type(parent) is cst.AnnAssign:
        return _tensor_free_annotation(parent.annotation.annotation)
    if type(parent) is cst.Return:
        function = ctx.enclosing_function()
        return function is not None and function.returns is not None and _tensor_free_annotation(function.returns.annotation)
    return False


def in_dataset_class(ctx) -> bool:
    """Is the call inside a class deriving from a `...Dataset`? Datasets read caches they
    wrote themselves, on the CPU, for CPU batches."""
    for ancestor in ctx.ancestors:
        if type(ancestor) is cst.ClassDef:
            for base in ancestor.bases:
                name = dotted_name(base.value) or ""
                if name.rpartition(".")[2].endswith("Dataset"):
                    return True
    return False


def device_in_scope(ctx) -> str:
    """The device expression a fix can map to here: the enclosing function's `device`
    name if it binds one, else `"cpu"`."""
    function = ctx.enclosing_function()
    if function is not None and "device" in ctx.bindings_of(function):
        return "device"
    return '"cpu"'


def feeds_load_state_dict(ctx) -> bool:
    """`model.load_state_dict(torch.load(p))` or `...(torch.load(p)["model"])`, which
    copies the loaded values into the model's own tensors: not with `assign=True`, where
    the module adopts the loaded tensors themselves (and their device)."""
    ancestors = ctx.ancestors
    index = len(ancestors) - 1
    while index >= 0 and type(ancestors[index]) in (cst.Subscript, cst.SubscriptElement, cst.Index):
        index -= 1
    if index < 1 or type(ancestors[index]) is not cst.Arg:
        return False
    call = ancestors[index - 1]
    return (
        type(call) is cst.Call
        and type(call.func) is cst.Attribute
        and call.func.attr.value == "load_state_dict"
        and call.args[0] is ancestors[index]
        and _copies_into_the_model(call)
    )


def _copies_into_the_model(call: cst.Call) -> bool:
    """`load_state_dict(sd, strict, assign)` copies into the model's tensors only when
    `assign` is certainly false: absent, or the literal False. `assign=True`, a name, or
    `**kwargs`/`*args` that may carry it: the loaded tensors may become the parameters."""
    if any(arg.star for arg in call.args):
        return False
    positional = [arg for arg in call.args if arg.keyword is None]
    assign = next((arg for arg in call.args if arg.keyword is not None and arg.keyword.value == "assign"), None)
    if assign is None and len(positional) >= 3:
        assign = positional[2]
    return assign is None or (type(assign.value) is cst.Name and assign.value.value == "False")


#: Annotations of values that hold no tensors, and the containers that keep it so.
_PLAIN_TYPES = frozenset({"str", "int", "float", "bool", "bytes", "complex", "None", "Ellipsis"})
_PLAIN_CONTAINERS = frozenset({
    "list", "List", "tuple", "Tuple", "dict", "Dict", "set", "Set", "frozenset", "FrozenSet", "Optional", "Union",
    "Sequence", "Mapping", "OrderedDict", "DefaultDict", "defaultdict",
})


def _tensor_free_annotation(annotation: cst.BaseExpression) -> bool:
    """`dict[str, list[int]]`, `tuple[dict[str, str], list[str]]`, `Optional[str]`,
    `np.ndarray`, `npt.NDArray[...]`: built only from plain values or numpy arrays. A bare container (`dict`) or any other name (`Tensor`, `Any`) may hold
    tensors."""
    kind = type(annotation)
    if kind is cst.Name:
        return annotation.value in _PLAIN_TYPES
    if kind is cst.Attribute:  # `np.ndarray`, `numpy.ndarray`: numpy arrays, no tensors
        return annotation.attr.value == "ndarray"
    if kind is cst.Ellipsis:
        return True
    if kind is cst.BinaryOperation and type(annotation.operator) is cst.BitOr:
        return _tensor_free_annotation(annotation.left) and _tensor_free_annotation(annotation.right)
    if kind is cst.Subscript:
        container = annotation.value
        name = container.attr.value if type(container) is cst.Attribute else container.value if type(container) is cst.Name else None
        if name in ("NDArray", "ndarray"):  # `npt.NDArray[np.float32]`
            return True
        if name not in _PLAIN_CONTAINERS:
            return False
        return all(type(element.slice) is cst.Index and _tensor_free_annotation(element.slice.value) for element in annotation.slice)
    return False


#: Words by which code names model state: what a checkpoint of weights is called
#: (`state_dict`, `netG`, `style_model`, `ckpt`, `resume_from`, `pretrained_weights`).
_MODEL_STATE_WORDS = re.compile(r"model|net|ckpt|checkpoint|state|weight|param|snapshot|pretrain|resume|generator|discriminator|encoder|decoder", re.I)
#: Keys of a checkpoint that hold model state.
_MODEL_STATE_KEYS = frozenset({"state_dict", "model", "model_state_dict", "net", "weights", "params", "module", "optimizer", "ema", "generator", "discriminator"})


#: Names shorter than this (`x`, `sd`, `obj`) say nothing of what they hold.
_DESCRIPTIVE = 4


def says_it_holds_model_state(ctx, load: cst.Call, keys: list[str]) -> bool:
    """Nothing in the code says what `load` returns is something other than model state: it
    goes into `load_state_dict(...)`, or is read for a key such as `"state_dict"` or
    `"model"`, or is bound to a name such as `state_dict`, `netG` or `checkpoint`, or to a name
    too short to say (`x`, `sd`), or is returned or handed on. A result the code names as
    something else (`triples`, `shards`, `save_dict`, `data_lists`) may hold no tensors at
    all, or tensors its writer put anywhere."""
    if feeds_load_state_dict(ctx) or _MODEL_STATE_KEYS.intersection(keys):
        return True
    ancestors = ctx.ancestors
    index = len(ancestors) - 1
    while index > 0 and type(ancestors[index]) in (cst.ListComp, cst.SetComp, cst.GeneratorExp):
        index -= 1  # `shards = [torch.load(p) for p in paths]`: the list is named
    parent = ancestors[index] if index >= 0 else None
    target = None
    if type(parent) is cst.Assign and len(parent.targets) == 1:
        target = parent.targets[0].target
    elif type(parent) is cst.AnnAssign:
        target = parent.target
    if target is not None:
        names = [target] if type(target) is not cst.Tuple else [element.value for element in target.elements]
        named = [name.value for name in names if type(name) is cst.Name]
        function = ctx.enclosing_function()
        scope = function.body if function is not None else ctx.module
        from torchlint.semantic.checkpoints import load_state_dict_calls

        handed = {value.value for _, value in load_state_dict_calls(scope) if type(value) is cst.Name}
        if handed.intersection(named):
            return True
        # A name that says what it holds decides; `x`, `sd`, `obj` say nothing either way.
        return not named or any(_MODEL_STATE_WORDS.search(name) or len(name) < _DESCRIPTIVE for name in named)
    return True  # returned or handed on: whatever the caller does with it, nothing says otherwise
