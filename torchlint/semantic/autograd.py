"""What autograd records and saves, asked of code: the questions in-place rules put to it.

Syntax-level questions, answered from the expression alone: which tensor an in-place write
modifies through views (`view_root`), which layers save their output (`layer_saves_output`)
and which are built in place (`built_inplace`), whether an update reads a name's `.grad`
(`reads_grad_of`), and which names reach a forward's return or a backward call
(`backward_mode_and_sinks`).

Value questions, answered from the file's semantic model by `Autograd`: is this a leaf that
requires grad (`leaf_requiring_grad`), one of several views (`several_views_of`), an output
autograd saved for backward that a backward can run through (`saved_for_backward`,
`backward_reaches`). Reads names only, never imports torch; the tables it reads are
torchlint.semantic.torch_api's, each entry checked with torch 2.13.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import libcst as cst

from torchlint.semantic import torch_api as api
from torchlint.semantic.grad_mode import children, is_backward_call
from torchlint.semantic.model import SemanticModel, is_basic_index
from torchlint.semantic.values import LEAF, MULTI_VIEW, SAVED_KINDS, Origin, Tensor
from torchlint.static.names import dotted_name

#: Methods and attributes that return a view sharing the receiver's storage (and version).
VIEW_METHODS = frozenset(
    {
        "view", "view_as", "reshape", "reshape_as", "t", "transpose", "permute", "squeeze", "unsqueeze",
        "expand", "expand_as", "narrow", "select", "flatten", "unflatten", "diagonal", "movedim", "moveaxis",
        "swapaxes", "swapdims", "contiguous", "unfold", "as_strided",
    }
)
VIEW_ATTRIBUTES = api.VIEW_ATTRIBUTES


@dataclass
class Scope:
    """A function (or the module, or a class body) being read, with what the questions found
    out about it: whether grad was switched off in it, and the names a backward reaches."""

    function: Optional[cst.FunctionDef]
    owner: Optional[cst.ClassDef]
    grad_switched_off: bool = False  # a `torch.set_grad_enabled(False)` statement ran
    backward_mode: Optional[str] = None  # "forward", "backward" or "" once computed
    sinks: Optional[frozenset[str]] = None  # names whose values reach backward / the return
    #: The function holding this one, for a function defined inside another (`def run(i, h)`
    #: in a forward): its values reach the forward's return through the nested one's.
    enclosing: Optional[Scope] = None


def enclosing_forward(scope: Scope) -> Optional[Scope]:
    """The forward this function is, or is nested in (directly or through other functions)."""
    current: Optional[Scope] = scope
    while current is not None and current.function is not None:
        if is_forward_method(current.function, current.owner):
            return current
        current = current.enclosing
    return None


def parameter_names(function: cst.FunctionDef) -> set[str]:
    params = function.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    names.discard("self")
    return names


def keyword_argument(call: cst.Call, name: str) -> Optional[cst.Arg]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def is_true(arg: Optional[cst.Arg | cst.BaseExpression]) -> bool:
    value = arg.value if type(arg) is cst.Arg else arg
    return type(value) is cst.Name and value.value == "True"


def built_inplace(call: cst.Call, qualname: str) -> bool:
    """`nn.ReLU(inplace=True)`, `nn.Dropout(0.1, True)`: a layer taking `inplace`, built so."""
    position = api.INPLACE_POSITION.get("torch.nn." + qualname.rpartition(".")[2])
    if position is None:
        return False
    flag = keyword_argument(call, "inplace")
    if flag is None:
        positional = [a for a in call.args if a.keyword is None]
        if position >= len(positional):
            return False
        flag = positional[position]
    return is_true(flag)


def layer_saves_output(qualname: str, inplace: bool) -> bool:
    return (
        api.LAYERS.get(qualname) in SAVED_KINDS
        or qualname in api.SAVED_OUTPUT_LAYERS
        or (inplace and qualname in api.SAVED_WHEN_INPLACE_LAYERS)
    )


def view_root(expr: cst.BaseExpression, *, index_target: bool) -> Optional[cst.BaseExpression]:
    """The tensor an in-place write on `expr` modifies, through views (basic indexing,
    `.view()`, `.t()`, `.T`): a name, an attribute (`self.fc.weight`), or a call returning
    several views (`x.chunk(2)[0]`). None through anything that copies (`x[mask]`,
    `x.clone()`) or leaves autograd (`.data`, `.grad`, `.detach()`)."""
    if index_target and type(expr) is cst.Subscript:
        expr = expr.value  # `w[mask] = v` writes into w whatever the index
    while True:
        if type(expr) is cst.Subscript and is_basic_index(expr):
            expr = expr.value
        elif type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in VIEW_METHODS:
            if expr.func.attr.value in api.MAY_COPY_METHODS:
                return expr  # a view or a copy: the model tells what that means
            expr = expr.func.value
        elif type(expr) is cst.Attribute and expr.attr.value in VIEW_ATTRIBUTES:
            expr = expr.value
        else:
            break
    if type(expr) is cst.Name:
        return expr
    if type(expr) is cst.Attribute:
        return None if expr.attr.value in ("data", "grad") else expr
    if type(expr) is cst.Call:
        func = expr.func
        method = func.attr.value if type(func) is cst.Attribute else None
        if method in api.MULTI_OUTPUT_VIEW_METHODS or (dotted_name(func) or "").rpartition(".")[2] in api.MULTI_OUTPUT_VIEW_METHODS:
            return expr
    return None


def reads_grad_of(expr: cst.CSTNode, name: str) -> bool:
    stack = [expr]
    while stack:
        node = stack.pop()
        if (
            type(node) is cst.Attribute
            and node.attr.value == "grad"
            and type(node.value) is cst.Name
            and node.value.value == name
        ):
            return True
        stack.extend(children(node))
    return False


def backward_mode_and_sinks(scope: Scope, module: cst.Module) -> tuple[str, Optional[frozenset[str]]]:
    """("forward", names reaching the return) for an nn.Module forward or a function nested in
    one, ("backward", names reaching a backward call) for code that calls backward, ("", None)
    elsewhere."""
    function = scope.function
    if function is not None and enclosing_forward(scope) is not None:
        body: cst.CSTNode = function.body
        mode = "forward"
    else:
        body = function.body if function is not None else module
        mode = "backward"
    flow = _FlowCollector(mode)
    if function is None:
        for statement in module.body:
            if type(statement) not in (cst.FunctionDef, cst.ClassDef):
                flow.read(statement)
    else:
        flow.read(body)
    if not flow.sinks:
        return "", None
    return mode, frozenset(_close_over(flow.sinks, flow.edges))


def is_forward_method(function: cst.FunctionDef, owner: Optional[cst.ClassDef]) -> bool:
    """`forward` (and timm-style `forward_features`, `_forward_impl`) of a class with bases."""
    name = function.name.value.lstrip("_")
    return owner is not None and bool(owner.bases) and name.startswith("forward")


def _close_over(sinks: set[str], edges: dict[str, set[str]]) -> set[str]:
    reached = set(sinks)
    stack = list(sinks)
    while stack:
        for source in edges.get(stack.pop(), ()):
            if source not in reached:
                reached.add(source)
                stack.append(source)
    return reached


def names_in(node: Optional[cst.CSTNode]) -> set[str]:
    found: set[str] = set()
    if node is None:
        return found
    stack = [node]
    while stack:
        item = stack.pop()
        if type(item) is cst.Name:
            found.add(item.value)
        elif type(item) is cst.Attribute:
            stack.append(item.value)  # `x.shape`: x, never the attribute name
            continue
        elif type(item) is cst.Lambda:
            continue
        else:
            stack.extend(children(item))
    return found


class _FlowCollector:
    """Which names feed which (assignments, `a.append(b)`, `a[k] = b`), and the sinks: names in
    return values (forward) or in backward calls. Nested functions and classes are skipped."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.sinks: set[str] = set()
        self.edges: dict[str, set[str]] = {}

    def read(self, root: cst.CSTNode) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda) and node is not root:
                continue
            self._read_node(node)
            stack.extend(children(node))

    def _read_node(self, node: cst.CSTNode) -> None:
        if type(node) is cst.Assign:
            for target in node.targets:
                self._flow(target.target, node.value)
        elif type(node) in (cst.AugAssign, cst.AnnAssign):
            self._flow(node.target, node.value)
        elif type(node) is cst.For:
            self._flow(node.target, node.iter)
        elif type(node) is cst.Return and self.mode == "forward":
            self.sinks |= names_in(node.value)
        elif type(node) is cst.Call:
            self._read_call(node)

    def _flow(self, target: cst.BaseExpression, value: Optional[cst.CSTNode]) -> None:
        sources = names_in(value)
        for name in _target_roots(target):
            self.edges.setdefault(name, set()).update(sources)

    def _read_call(self, node: cst.Call) -> None:
        func = node.func
        if self.mode == "backward" and is_backward_call(node):
            if type(func) is cst.Attribute and func.attr.value == "backward":
                self.sinks |= names_in(func.value)
            for arg in node.args:
                self.sinks |= names_in(arg.value)
        if type(func) is cst.Attribute and func.attr.value in ("append", "extend", "insert", "update", "add"):
            for name in _target_roots(func.value):
                self.edges.setdefault(name, set()).update(*(names_in(arg.value) for arg in node.args))


def _target_roots(target: cst.BaseExpression) -> Iterator[str]:
    while type(target) in (cst.Subscript, cst.Attribute):
        target = target.value
    if type(target) is cst.Name:
        yield target.value
    elif type(target) in (cst.Tuple, cst.List):
        for element in target.elements:
            yield from _target_roots(element.value)
    elif type(target) is cst.StarredElement:
        yield from _target_roots(target.value)


class Autograd:
    """Questions about autograd in one file, answered from its semantic model: is this a leaf
    that requires grad, one of several views, an output autograd saved for backward, and can
    a backward run through it here. Values are the model's may-sets (`model.resolve`)."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self.ctx = model.ctx

    def tensors(self, value) -> set[Tensor]:
        """The tensors with a known property `value` may be."""
        return {v for v in self.model.resolve(value) if type(v) is Tensor}

    def leaf_requiring_grad(self, values: set[Tensor]) -> Optional[Origin]:
        """Where the leaf that requires grad among `values` was made (a Parameter, a layer's
        `weight`, `requires_grad=True`)."""
        # A leaf copied (`.clone()`, `.detach()`) or handed back by a call is not vouched for.
        leaves = [v for v in values if v.kind == LEAF and v.recorded]
        return self.first(leaves) if leaves else None

    def requires_grad_turned_off(self, scope: Scope, dotted: str) -> bool:
        """`conv.weight.requires_grad = False` in this function, or `self.embed.weight
        .requires_grad = False` somewhere in the class."""
        if self.model.frozen_path(scope.function or self.ctx.module, dotted):
            return True
        owner = scope.owner
        return owner is not None and dotted.startswith("self.") and self.model.frozen(owner.name.value, dotted[5:])

    def several_views_of(self, values: set[Tensor]) -> Optional[Origin]:
        """The `chunk`/`split`/`unbind` call, of a tensor that requires grad, one of whose
        several views `values` may be."""
        views = [v for v in values if v.kind == MULTI_VIEW and v.recorded]
        return self.first(views) if views else None

    def saved_for_backward(self, values: set[Tensor], scope: Scope, name: Optional[str], training: bool) -> Optional[Origin]:
        """The output autograd saved that a write on `name` modifies, where a backward can run
        through it: in an nn.Module's forward (the value reaches the return) or in code that
        calls backward (it reaches the loss); or an argument a caller passes (a helper's)."""
        if name is None or not training:
            return None
        saved = [v for v in values if v.kind in SAVED_KINDS and v.recorded and (not v.from_layer or self.built_here(v.origin))]
        if not saved:
            return None
        function = scope.function

        def made_here(value: Tensor) -> bool:
            if function is None:
                return True
            if value.origin.node is None or value.origin.path:
                return False
            first, _, last, _ = self.ctx.position(function)
            return first <= self.line(value.origin.node) <= last

        if self.backward_reaches(scope, name):
            # A layer-less module (a transform) may well get inputs without grad: outputs it
            # computes from its bare arguments are not taken to require grad.
            candidates = [v for v in saved if not (made_here(v) and self.from_arguments_only(scope, v.origin))]
        elif function is not None and name in parameter_names(function):
            candidates = [v for v in saved if not made_here(v)]  # a helper's argument: what callers pass
        else:
            return None  # neither on the way to backward here, nor an argument a caller passes
        if not candidates:
            return None
        return self.first(candidates)

    def backward_reaches(self, scope: Scope, name: str) -> bool:
        """Only where a backward can run through this code: an nn.Module's forward (the value
        reaches the return) or a function that calls backward (the value reaches the loss)."""
        if scope.backward_mode is None:
            scope.backward_mode, scope.sinks = backward_mode_and_sinks(scope, self.ctx.module)
        if not scope.backward_mode or scope.sinks is None:
            return False
        return name.partition(".")[0] in scope.sinks

    def built_here(self, origin: Origin) -> bool:
        """A layer's output is trusted when the layer is the one thing some `self.<attr>` of a
        class here is built as: timm's `nn.ReLU() if relu else nn.Identity()` hangs on
        arguments the model does not evaluate."""
        return origin.node is not None and id(origin.node) in self.model.sole_layers()

    def from_arguments_only(self, scope: Scope, origin: Origin) -> bool:
        """In a forward of a module that owns no layers, an op reading nothing but the
        function's never-reassigned arguments (`img.exp()` in a transform)."""
        forward = enclosing_forward(scope)
        if scope.backward_mode != "forward" or forward is None or self.owns_layers(forward.owner) or scope.function is None:
            return False
        call = origin.node
        if type(call) is not cst.Call:
            return False
        names: set[str] = set()
        for arg in call.args:
            names |= names_in(arg.value)
        if type(call.func) is cst.Attribute and self.ctx.qualname(call.func) is None:
            names |= names_in(call.func.value)  # the receiver of `x.softmax(-1)`, `self` of `self.act(x)`
        arguments = parameter_names(scope.function)
        return bool(names) and names <= arguments and not any(self.model.bound_in(scope.function, n) for n in names)

    def owns_layers(self, owner: Optional[cst.ClassDef]) -> bool:
        return owner is not None and self.model.owns_layers(owner.name.value)

    def first(self, values: list[Tensor]) -> Origin:
        """The origin of the value made first in the file (messages name one, stably)."""
        return min(values, key=lambda v: (self.origin_line(v.origin), v.origin.text)).origin

    def origin_line(self, origin: Origin) -> int:
        return origin.line or (self.line(origin.node) if origin.node is not None else 0)

    def line(self, node: cst.CSTNode) -> int:
        return self.ctx.position(node)[0]
