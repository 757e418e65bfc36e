"""The semantic model's device domain: where does a CPU tensor from a factory meet a device tensor?

One body (a function's, or the module's own statements) is read in source order with an
environment that maps local names to what they hold. The arms of an `if` are read from the
same entry and joined as may-values (a CPU tensor on one path is one on that path); a loop
body is read twice, so a value bound late in it reaches its top.

- ``Cpu``: a tensor made by a factory without ``device=`` (still on the CPU), through views,
  elementwise ops with scalars or other such tensors; legacy constructors
  (``torch.LongTensor(...)``) and ``torch.normal(mean, std, size=...)`` included;
- ``Device``: a tensor that lives on the program's device: a parameter of device code, a
  module's parameter or buffer, anything explicitly moved (``.cuda()``, ``.to(device)``,
  ``device=device``), the output of a module given such a tensor or moved itself, and
  anything computed from those;
- ``Module``: an ``nn.Module`` (a torch layer, ``nn.Sequential``, a class of this file, a
  parameter every caller passes a module to, as the semantic model resolves it), and whether
  it was moved to the device;
- ``Seq``: a list or tuple literal of such values (``torch.cat([x, z])``);
- ``None``: anything else — ints, shapes, unknown values. Unknown is never a tensor here:
  precision before recall.

What a function of this file returns is read the same way, on demand (``FlowSetup.returns``):
a CPU tensor made in ``init_hidden()`` meets the LSTM in ``forward``.

A *meeting* is an operation that needs its tensor operands on one device (arithmetic,
comparison, torch functions, tensor methods, a parameterised submodule) and gets a ``Cpu``
operand together with a ``Device`` one. Indexing, ``copy_`` and assignment into a slice
accept CPU operands on CUDA tensors, and 0-dim CPU tensors mix with any device, so neither
is a meeting. The rule never imports torch; the facts above were checked with torch 2.13's
meta device and FakeTensorMode (CUDA semantics without a GPU).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional, Union

import libcst as cst

from torchlint.semantic.tensor_methods import TENSOR_ATTRIBUTE_NAMES
from torchlint.static.names import dotted_name



def keyword(call: cst.Call, name: str) -> Optional[cst.Arg]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional(call: cst.Call) -> list:
    return [arg for arg in call.args if arg.keyword is None and not arg.star]


# -- what the factories are -------------------------------------------------------------------

#: Factories whose positional arguments (or one sequence) are the sizes.
SIZE_FACTORIES = frozenset({"zeros", "ones", "empty", "rand", "randn"})
#: Factories that make a 1-D tensor whatever their arguments.
ONE_DIM_FACTORIES = frozenset({
    "arange", "range", "linspace", "logspace", "randperm",
    "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window",
})
TWO_DIM_FACTORIES = frozenset({"eye", "tril_indices", "triu_indices"})
DATA_FACTORIES = frozenset({"tensor", "as_tensor"})
FACTORY_NAMES = SIZE_FACTORIES | ONE_DIM_FACTORIES | TWO_DIM_FACTORIES | DATA_FACTORIES | {"full", "randint"}
FACTORIES = frozenset(f"torch.{name}" for name in FACTORY_NAMES)

#: Legacy typed constructors: `torch.LongTensor([1, 2])`, `torch.FloatTensor(3, 4)` make CPU
#: tensors (never 0-dim); `torch.cuda.*Tensor` are their device twins.
LEGACY_CONSTRUCTORS = frozenset(
    f"torch.{name}Tensor"
    for name in ("", "Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte", "Bool")
)

#: Factories with a `Tensor.new_*` twin, for the message.
NEW_TWINS = frozenset({"zeros", "ones", "empty", "full", "tensor"})

# -- what tensor methods do -------------------------------------------------------------------

#: Methods and attributes whose result is not a tensor (or not one we follow).
NON_TENSOR_METHODS = frozenset({
    "size", "dim", "numel", "nelement", "item", "tolist", "numpy", "stride", "element_size",
    "data_ptr", "get_device", "is_contiguous", "is_floating_point", "is_complex", "type",
    "storage", "untyped_storage", "split", "chunk", "unbind", "tensor_split", "__len__",
    "register_hook", "backward", "equal", "allclose",
})
NON_TENSOR_ATTRIBUTES = frozenset({
    "shape", "device", "dtype", "ndim", "is_cuda", "requires_grad", "grad_fn", "layout",
    "is_leaf", "names", "is_sparse", "is_quantized", "is_meta",
})
#: Attributes that are the same tensor seen differently.
TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "real", "imag"})
#: Methods whose result keeps the receiver's number of dimensions.
SAME_NDIM_METHODS = frozenset({
    "float", "double", "half", "bfloat16", "long", "int", "short", "bool", "byte", "char",
    "contiguous", "clone", "detach", "abs", "neg", "exp", "log", "log1p", "log2", "sqrt", "rsqrt",
    "sin", "cos", "sigmoid", "tanh", "relu", "floor", "ceil", "round", "sign", "reciprocal",
    "cumsum", "cumprod", "clamp", "clamp_", "clamp_min", "clamp_max", "pow", "mul", "mul_", "div",
    "div_", "add", "add_", "sub", "sub_", "fill_", "zero_", "uniform_", "normal_", "exponential_",
    "bernoulli_", "random_", "requires_grad_", "tril", "triu", "tril_", "triu_", "masked_fill",
    "masked_fill_", "eq", "ne", "lt", "le", "gt", "ge", "logical_not", "logical_and", "logical_or",
    "logical_xor", "bitwise_and", "bitwise_or", "bitwise_not", "flip", "roll", "fmod", "remainder",
    "transpose", "permute", "t", "cpu", "pin_memory", "float_power", "where", "maximum", "minimum",
    "floor_divide", "true_divide", "mm", "matmul", "bmm", "expand_as", "view_as", "reshape_as",
})
#: Methods whose result has as many dimensions as they get sizes.
RESHAPE_METHODS = frozenset({"view", "reshape", "expand", "repeat", "broadcast_to", "new_empty"})
REDUCTIONS = frozenset({
    "sum", "mean", "prod", "max", "min", "amax", "amin", "all", "any", "argmax", "argmin", "norm",
    "std", "var", "median", "logsumexp", "count_nonzero", "nansum", "nanmean",
})
#: Methods that put the tensor on another device: afterwards it is no longer a CPU tensor.
MOVING_METHODS = frozenset({"to", "cuda", "type_as", "type", "to_device", "xpu", "mps"})
#: Methods that accept operands on another device: copies, shape-only reads, indexing.
CROSS_DEVICE_METHODS = frozenset({
    "to", "type_as", "copy_", "expand_as", "view_as", "reshape_as", "set_", "index_put_",
    "index_put", "__getitem__", "__setitem__", "new_tensor", "new_zeros", "new_ones", "new_empty",
    "new_full", "register_buffer", "register_parameter", "append", "extend", "insert",
})
#: Torch functions that do not need their tensor arguments on one device.
CROSS_DEVICE_FUNCTIONS = frozenset({
    "torch.broadcast_tensors", "torch.broadcast_shapes", "torch.is_tensor", "torch.numel",
    "torch.save", "torch.jit.annotate", "torch.jit.isinstance", "torch._assert",
    # these take index or length tensors that must (or may) stay on the CPU
    "torch.tensor_split", "torch.nn.utils.rnn.pack_padded_sequence", "torch.nn.functional.ctc_loss",
    "torch.ctc_loss",
})
#: Namespaces whose functions move, save, trace, test or communicate tensors rather than compute
#: with them (`torch.cuda.comm.broadcast`, process-group collectives whose rules vary by backend).
CROSS_DEVICE_PREFIXES = (
    "torch.cuda.", "torch.distributed.", "torch.utils.", "torch.jit.", "torch.onnx.", "torch.testing.",
    "torch.fx.", "torch.export.", "torch.compiler.", "torch._dynamo.", "torch.func.", "torch.library.",
    # torch's own internals and quantization utilities take metadata tensors (sizes, eps)
    # that they keep on the CPU or move themselves
    "torch._", "torch.ao.",
)
TORCH_DTYPES = frozenset(
    f"torch.{name}"
    for name in (
        "float", "float16", "float32", "float64", "double", "half", "bfloat16", "int", "int8",
        "int16", "int32", "int64", "long", "short", "uint8", "bool", "complex64", "complex128",
        "cfloat", "cdouble",
    )
)
#: Namespaces of functions that take and return tensors.
TENSOR_FUNCTION_PREFIXES = ("torch.", "torchvision.ops.", "einops.")
NOT_TENSOR_FUNCTIONS = frozenset({
    "torch._shape_as_tensor",  # always a CPU tensor, whatever its input's device
    "torch.Size", "torch.device", "torch.finfo", "torch.iinfo", "torch.no_grad", "torch.enable_grad",
    "torch.is_grad_enabled", "torch.get_default_dtype", "torch.manual_seed",
})


# -- the values ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cpu:
    """A CPU tensor made by ``origin`` (a factory call without ``device=``)."""

    origin: cst.Call
    ndim: Optional[int]  # None when unknown


@dataclass(frozen=True)
class Device:
    """A tensor on the program's device; ``root`` is the name it is read through (a parameter,
    `self.<attr>`), "" when none is sure to be a tensor. `moved`: put there by `.cuda()` or
    `.to(device)` (as opposed to computed from device tensors)."""

    root: str
    moved: bool = False


@dataclass(frozen=True)
class Module:
    """An nn.Module; ``moved`` once `.cuda()`/`.to(device)` put its parameters on the device."""

    root: str
    moved: bool = False


@dataclass(frozen=True)
class Seq:
    items: tuple


Value = Union[Cpu, Device, Module, Seq, None]


@dataclass
class Meeting:
    cpu: Cpu
    other: str  # what it meets, as written: "x", "lengths", "self.embed"
    root: str   # the tensor whose device the factory should use ("" when none is in reach)
    node: cst.CSTNode
    #: the body the meeting is in (a FunctionDef, or the Module for script code)
    body: Optional[cst.CSTNode] = None


# -- small readers ---------------------------------------------------------------------------

def is_literal(node: cst.BaseExpression) -> bool:
    if type(node) in (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString):
        return True
    if type(node) is cst.Name and node.value in ("True", "False", "None"):
        return True
    if type(node) is cst.UnaryOperation:
        return is_literal(node.expression)
    return False


def is_empty_sequence(node: cst.BaseExpression) -> bool:
    return type(node) in (cst.Tuple, cst.List) and not node.elements


def literal_depth(node: cst.BaseExpression) -> Optional[int]:
    """Dimensions of a nested list/tuple literal: `[[1, 2]]` -> 2; None when not a literal."""
    if type(node) in (cst.List, cst.Tuple):
        if not node.elements:
            return 1
        first = node.elements[0].value
        inner = literal_depth(first) if type(first) in (cst.List, cst.Tuple) else 0
        return None if inner is None else inner + 1
    if type(node) is cst.ListComp:
        return None
    return None


def size_count(args: list[cst.Arg]) -> Optional[int]:
    """How many dimensions the sizes in `args` describe: `(B, T)` or `B, T` -> 2."""
    if any(arg.star for arg in args):
        return None
    if len(args) == 1:
        only = args[0].value
        if type(only) in (cst.Tuple, cst.List):
            if any(type(e) is cst.StarredElement for e in only.elements):
                return None
            return len(only.elements)
        if type(only) in (cst.Integer, cst.BinaryOperation) or (
            type(only) is cst.Subscript and type(only.value) is cst.Attribute and only.value.attr.value == "shape"
        ):
            return 1
        if type(only) is cst.Call and type(only.func) is cst.Attribute and only.func.attr.value == "size" and only.args:
            return 1
        return None  # a name may hold a whole shape
    return len(args)


def root_of(node: cst.BaseExpression) -> Optional[str]:
    """The name an expression reads first: `lengths[:, None]` -> lengths, `self.w.t()` -> self.w."""
    while True:
        if type(node) is cst.Subscript:
            node = node.value
        elif type(node) is cst.Call and type(node.func) is cst.Attribute:
            node = node.func.value
        elif type(node) is cst.Attribute:
            if type(node.value) is cst.Name and node.value.value == "self":
                return f"self.{node.attr.value}"
            node = node.value
        elif type(node) is cst.Name:
            return node.value
        else:
            return None


def iter_params(function: cst.FunctionDef) -> Iterator[cst.Param]:
    params = function.params
    yield from params.posonly_params
    yield from params.params
    yield from params.kwonly_params


def nested_scopes() -> tuple[type, ...]:
    """Nested scopes are read on their own (their factories belong to them). A function, not
    a module constant: touching libcst at import time would load it for every run."""
    return (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def annotation_text(module: cst.Module, param: cst.Param) -> Optional[str]:
    if param.annotation is None:
        return None
    annotation = param.annotation.annotation
    # `Tensor`, `torch.Tensor`: spelled from the names, without generating code (the
    # costliest way to read a parameter; the spaces it would keep mean nothing here).
    spelled = dotted_name(annotation) if type(annotation) in (cst.Name, cst.Attribute) else None
    return spelled if spelled is not None else module.code_for_node(annotation)


def is_tensor_annotation(text: str) -> bool:
    """`Tensor`, `torch.Tensor`, `Optional[Tensor]`, `Tensor | None` — not `List[Tensor]`."""
    cleaned = text.replace(" ", "").strip("'\"")
    for wrapper in ("Optional[", "typing.Optional["):
        if cleaned.startswith(wrapper) and cleaned.endswith("]"):
            cleaned = cleaned[len(wrapper):-1]
    cleaned = cleaned.replace("|None", "").replace("None|", "")
    return cleaned in ("Tensor", "torch.Tensor", "T.Tensor", "th.Tensor")


# -- the flow --------------------------------------------------------------------------------

@dataclass
class FlowSetup:
    """What the rule knows before reading the body."""

    #: name -> root for each parameter that holds a device tensor
    tensor_params: dict[str, str]
    #: resolves a callee to its qualified name, or None (respects local shadowing)
    qualname: Callable[[cst.BaseExpression], Optional[str]]
    #: in a module's forward: self attributes that are parameters or buffers
    self_tensors: frozenset = frozenset()
    #: in a module's forward: self attributes that are submodules holding parameters
    self_modules: frozenset = frozenset()
    self_name: Optional[str] = None
    #: the semantic model's answer for a callee or receiver: a Module when it resolves to one
    module_of: Callable[[cst.BaseExpression], Optional[Module]] = lambda expr: None
    #: what calling a function of this file returns, read in this domain (None: unknown)
    returns: Callable[[cst.Call], Value] = lambda call: None
    #: the FunctionDef being read, or the Module for script code
    body: Optional[cst.CSTNode] = None


@dataclass
class Flow:
    setup: FlowSetup
    env: dict = field(default_factory=dict)
    meetings: dict = field(default_factory=dict)  # id(origin) -> Meeting (the first one)
    device_context: int = 0  # depth of `with torch.device(...)` blocks
    #: what each `return` gives back
    returned: list = field(default_factory=list)
    #: the factory calls this body made CPU tensors with
    made: list = field(default_factory=list)

    def __post_init__(self) -> None:
        for name, root in self.setup.tensor_params.items():
            self.env[name] = Device(root)

    # -- statements ---------------------------------------------------------------------------
    def run(self, body: cst.BaseSuite) -> None:
        for statement in self._statements(body):
            self.statement(statement)

    @staticmethod
    def _statements(body: cst.BaseSuite) -> tuple:
        return tuple(body.body)

    def statement(self, node: cst.CSTNode) -> None:
        if type(node) is cst.SimpleStatementLine:
            for small in node.body:
                self.small_statement(small)
        elif type(node) is cst.SimpleStatementSuite:
            for small in node.body:
                self.small_statement(small)
        elif type(node) is cst.If:
            self.value(node.test)
            self.branches(node.body, node.orelse)
        elif type(node) is cst.Else:
            self.run(node.body)
        elif type(node) is cst.While:
            self.value(node.test)
            self.loop(node.body)
            if node.orelse is not None:
                self.run(node.orelse.body)
        elif type(node) is cst.For:
            self.bind(node.target, self._element(self.value(node.iter)))
            self.loop(node.body)
            if node.orelse is not None:
                self.run(node.orelse.body)
        elif type(node) is cst.With:
            self.with_statement(node)
        elif type(node) is cst.Try:
            self.run(node.body)
            for handler in node.handlers:
                self.run(handler.body)
            if node.orelse is not None:
                self.run(node.orelse.body)
            if node.finalbody is not None:
                self.run(node.finalbody.body)
        # nested functions and classes are read on their own; match statements are skipped

    def branches(self, body: cst.BaseSuite, orelse) -> None:
        """Both arms from the same entry; afterwards each name holds the join of what the arms
        left in it (a missing `else` leaves the entry's). `elif` chains join recursively."""
        entry = dict(self.env)
        self.run(body)
        taken = self.env
        self.env = dict(entry)
        if orelse is not None:
            self.statement(orelse)
        self.env = _join(taken, self.env, entry)

    def loop(self, body: cst.BaseSuite) -> None:
        """Twice: what the end of the body binds reaches its top on the next iteration."""
        entry = dict(self.env)
        self.run(body)
        self.env = _join(entry, self.env, entry)
        self.run(body)
        self.env = _join(entry, self.env, entry)

    @staticmethod
    def _element(iterable: Value) -> Value:
        """`for t in <CPU tensor>` gives CPU rows; anything else is not followed."""
        if isinstance(iterable, Cpu):
            return Cpu(iterable.origin, None if iterable.ndim is None else iterable.ndim - 1 or None)
        return None

    def with_statement(self, node: cst.With) -> None:
        device = False
        for item in node.items:
            self.value(item.item)
            if self._is_device_context(item.item):
                device = True
            if item.asname is not None:
                self.bind(item.asname.name, None)
        self.device_context += device
        self.run(node.body)
        self.device_context -= device

    def _is_device_context(self, node: cst.BaseExpression) -> bool:
        """`with torch.device("cuda"):` makes factories follow that device; so may `with dev:`."""
        if type(node) is cst.Call:
            return self.setup.qualname(node.func) == "torch.device"
        if type(node) in (cst.Name, cst.Attribute):
            return "device" in (root_of(node) or "").lower() or (
                type(node) is cst.Attribute and "device" in node.attr.value.lower()
            )
        return False

    def small_statement(self, node: cst.BaseSmallStatement) -> None:
        if type(node) is cst.Assign:
            value = self.value(node.value)
            for target in node.targets:
                self.bind(target.target, value, node.value)
        elif type(node) is cst.AnnAssign:
            if node.value is not None:
                self.bind(node.target, self.value(node.value), node.value)
        elif type(node) is cst.AugAssign:
            right = self.value(node.value)
            if type(node.target) is cst.Name:
                left = self.env.get(node.target.value)
                self.env[node.target.value] = self.combine(left, node.target, right, node.value, node)
            else:
                self.target_expressions(node.target)
        elif type(node) is cst.Expr:
            self.value(node.value)
        elif type(node) is cst.Return and node.value is not None:
            self.returned.append(self.value(node.value))
        elif type(node) is cst.Assert:
            self.value(node.test)
        elif type(node) is cst.Del:
            pass

    def bind(self, target: cst.BaseExpression, value: Value, source: Optional[cst.BaseExpression] = None) -> None:
        if type(target) is cst.Name:
            if value is None:
                self.env.pop(target.value, None)
            else:
                self.env[target.value] = _named(value, target.value)
        elif type(target) in (cst.Tuple, cst.List):
            items = value.items if isinstance(value, Seq) and len(value.items) == len(target.elements) else None
            for index, element in enumerate(target.elements):
                if items is not None:
                    item = items[index]
                elif isinstance(value, Cpu):
                    item = Cpu(value.origin, None)  # `ys, xs = torch.meshgrid(...)`: each a CPU tensor
                elif isinstance(value, Device):
                    item = Device("")
                else:
                    item = None
                self.bind(element.value, item)
        elif type(target) is cst.StarredElement:
            self.bind(target.value, None)
        else:
            # `x[i] = cpu` and `self.buf = cpu` copy or store; they combine nothing
            self.target_expressions(target)

    def target_expressions(self, target: cst.BaseExpression) -> None:
        if type(target) is cst.Subscript:
            self.value(target.value)
            self.slice_values(target)

    # -- expressions ------------------------------------------------------------------------
    def value(self, node: cst.BaseExpression) -> Value:
        # Exact types (libcst's classes are ABCs, never subclassed): every expression of a
        # read function passes here, most of them names, attributes, calls and literals.
        kind = type(node)
        if kind is cst.Name:
            return self.env.get(node.value)
        if kind is cst.Attribute:
            return self.attribute(node)
        if kind is cst.Call:
            return self.call(node)
        if kind in _literal_types():
            return None
        if kind is cst.Subscript:
            return self.subscript(node)
        if type(node) is cst.BinaryOperation:
            left = self.value(node.left)
            right = self.value(node.right)
            return self.combine(left, node.left, right, node.right, node)
        if type(node) is cst.Comparison:
            left_node = node.left
            left = self.value(left_node)
            result: Value = None
            for target in node.comparisons:
                right = self.value(target.comparator)
                if type(target.operator) in (cst.In, cst.NotIn, cst.Is, cst.IsNot):
                    result = None
                else:
                    result = self.combine(left, left_node, right, target.comparator, node)
                left, left_node = right, target.comparator
            return result if len(node.comparisons) == 1 else None
        if type(node) is cst.UnaryOperation:
            inner = self.value(node.expression)
            return None if type(node.operator) is cst.Not else inner
        if type(node) is cst.BooleanOperation:
            self.value(node.left)
            self.value(node.right)
            return None
        if type(node) is cst.IfExp:
            self.value(node.test)
            body = self.value(node.body)
            orelse = self.value(node.orelse)
            # a CPU tensor on one branch is one on that path
            for candidate in (body, orelse):
                if isinstance(candidate, Cpu):
                    return candidate
            return body if body is not None else orelse
        if type(node) in (cst.Tuple, cst.List):
            return Seq(tuple(self.value(element.value) for element in node.elements))
        if type(node) is cst.StarredElement:
            return self.value(node.value)
        if type(node) is cst.NamedExpr:
            value = self.value(node.value)
            self.bind(node.target, value)
            return value
        if type(node) is cst.Dict:
            for element in node.elements:
                if type(element) is cst.DictElement:
                    self.value(element.key)
                    self.value(element.value)
                else:
                    self.value(element.value)
            return None
        if type(node) is cst.Set:
            for element in node.elements:
                self.value(element.value)
            return None
        if type(node) is cst.Await:
            return self.value(node.expression)
        return None  # literals, comprehensions and lambdas (their own scopes) and the rest

    def attribute(self, node: cst.Attribute) -> Value:
        attr = node.attr.value
        base = node.value
        if type(base) is cst.Name and base.value == self.setup.self_name:
            if attr in self.setup.self_tensors:
                return Device(f"self.{attr}")
            return None
        if (
            type(base) is cst.Attribute
            and type(base.value) is cst.Name
            and base.value.value == self.setup.self_name
            and base.attr.value in self.setup.self_modules
            and attr in ("weight", "bias")
        ):
            return Device(f"self.{base.attr.value}.{attr}")
        value = self.value(base)
        if attr in TENSOR_ATTRIBUTES and isinstance(value, (Cpu, Device)):
            return value
        return None

    def subscript(self, node: cst.Subscript) -> Value:
        base = self.value(node.value)
        self.slice_values(node)
        if isinstance(base, Device):
            return base  # indexing a device tensor with CPU indices is fine on CUDA
        if isinstance(base, Seq):
            return None
        if not isinstance(base, Cpu):
            return None
        ndim = self._indexed_ndim(base.ndim, node)
        if ndim == 0 or (ndim is None and not self._keeps_a_dimension(node)):
            return None  # a 0-dim tensor mixes with any device
        return Cpu(base.origin, ndim)

    def slice_values(self, node: cst.Subscript) -> None:
        for element in node.slice:
            if type(element.slice) is cst.Index:
                self.value(element.slice.value)
            elif type(element.slice) is cst.Slice:
                for part in (element.slice.lower, element.slice.upper, element.slice.step):
                    if part is not None:
                        self.value(part)

    @staticmethod
    def _keeps_a_dimension(node: cst.Subscript) -> bool:
        """`t[:, None]`, `t[i:j]` keep a dimension whatever `t` was."""
        for element in node.slice:
            if type(element.slice) is cst.Slice:
                return True
            if type(element.slice.value) is cst.Name and element.slice.value.value == "None":
                return True
        return False

    def _indexed_ndim(self, ndim: Optional[int], node: cst.Subscript) -> Optional[int]:
        if ndim is None:
            return None
        for element in node.slice:
            if type(element.slice) is cst.Slice:
                continue
            index = element.slice.value
            if type(index) is cst.Name and index.value == "None":
                ndim += 1
            elif type(index) is cst.Ellipsis:
                return None
            elif type(index) is cst.Integer or (type(index) is cst.UnaryOperation and type(index.expression) is cst.Integer):
                ndim -= 1
            elif type(index) is cst.Name and index.value not in self.env:
                ndim -= 1  # most likely an int
            else:
                return None
        return ndim

    def combine(self, left: Value, left_node, right: Value, right_node, node: cst.CSTNode) -> Value:
        """Arithmetic and comparison: both operands must be on one device unless one is 0-dim."""
        if isinstance(left, Cpu) and isinstance(right, Device):
            self.meet(left, right, right_node, node)
            return right
        if isinstance(left, Device) and isinstance(right, Cpu):
            self.meet(right, left, left_node, node)
            return left
        if isinstance(left, Cpu):
            return left if is_literal(right_node) or isinstance(right, Cpu) else Cpu(left.origin, None) if right is None else None
        if isinstance(right, Cpu):
            return right if is_literal(left_node) else Cpu(right.origin, None) if left is None else None
        if isinstance(left, Device):
            return left
        if isinstance(right, Device):
            return right
        return None

    def meet(self, cpu: Cpu, device: Device, other_node, node: cst.CSTNode) -> None:
        if id(cpu.origin) in self.meetings:
            return
        other = root_of(other_node) if other_node is not None else None
        if other is None and type(other_node) is cst.Call:
            called = dotted_name(other_node.func)
            other = f"{called}(...)" if called else None
        self.meetings[id(cpu.origin)] = Meeting(cpu, other or device.root or "a device tensor", device.root, node, self.setup.body)

    def call(self, node: cst.Call) -> Value:
        func = node.func
        qualname = self.setup.qualname(func)
        if qualname is not None and (qualname in FACTORIES or qualname in LEGACY_CONSTRUCTORS):
            return self.factory(node, qualname)
        if qualname == "torch.normal" and _sized_normal(node):
            return self.factory(node, qualname)
        if type(func) is cst.Attribute and qualname is None:
            return self.method_call(node, func)
        if qualname is not None and _is_module_class(qualname):
            for arg in node.args:
                self.value(arg.value)
            return Module("")
        if qualname is not None and qualname.startswith(TENSOR_FUNCTION_PREFIXES) and qualname not in NOT_TENSOR_FUNCTIONS:
            return self.tensor_function(node, qualname)
        callee = self.value(func)
        values = [self.value(arg.value) for arg in node.args]
        if qualname is not None:
            return None
        module = callee if isinstance(callee, Module) else None if callee is not None else self.setup.module_of(func)
        if module is not None:
            return self.apply_module(module, node, values)
        return self.setup.returns(node)

    def apply_module(self, module: Module, node: cst.Call, values: list) -> Value:
        """A module's output lives where its input or its parameters do. A CPU input to a
        moved module meets its parameters; next to a device input a CPU argument may be a
        length or an index (the module decides), so it is not a meeting."""
        flat = list(_flatten(values))
        devices = [v for v in flat if isinstance(v, Device)]
        if devices:
            return Device("")
        if not module.moved:
            return None
        for arg, value in zip(node.args, values):
            if arg.keyword is None and isinstance(value, Cpu):
                self.meet(value, Device(""), node.func, node)
        return Device("")

    def factory(self, node: cst.Call, qualname: str) -> Value:
        values = [self.value(arg.value) for arg in node.args]
        name = qualname.rpartition(".")[2]
        device = keyword(node, "device")
        if device is not None:
            return self._device_argument(device.value)
        if any(arg.star for arg in node.args) or keyword(node, "out") is not None or self.device_context:
            return None
        self.made.append(node)
        if qualname in LEGACY_CONSTRUCTORS:
            data = positional(node)
            if not data or (len(data) == 1 and isinstance(values[0], (Cpu, Device))):
                return None  # `torch.Tensor()` placeholder; `torch.Tensor(t)` shares t's storage
            return Cpu(node, literal_depth(data[0].value) if len(data) == 1 else len(data))
        if name == "normal":
            return Cpu(node, size_count([keyword(node, "size")]) if keyword(node, "size") else None)
        if name in DATA_FACTORIES:
            data = positional(node)
            if not data:
                return None
            if type(data[0].value) is cst.Name and isinstance(values[0], (Cpu, Device)):
                return None  # torch.tensor(t) copies a tensor; not a fresh factory
            ndim = literal_depth(data[0].value)
            if ndim is None and type(data[0].value) is not cst.ListComp:
                return None  # `torch.tensor(x)` may well be a Python scalar: 0-dim
            return Cpu(node, ndim)
        if name in ONE_DIM_FACTORIES:
            return Cpu(node, 1)
        if name in TWO_DIM_FACTORIES:
            return Cpu(node, 2)
        sizes = self._size_arguments(node, name)
        if sizes is None:
            return Cpu(node, None)
        if len(sizes) == 1 and is_empty_sequence(sizes[0].value):
            return None  # torch.zeros(()) is 0-dim
        if sizes and all(_is_zero_size(arg.value) for arg in sizes):
            return None  # `torch.empty(0)`, `torch.empty([0])`: a placeholder holding nothing
        if not sizes:
            return None
        return Cpu(node, size_count(sizes))

    @staticmethod
    def _size_arguments(node: cst.Call, name: str) -> Optional[list]:
        size = keyword(node, "size")
        if size is not None:
            return [size]
        args = positional(node)
        if name == "full":
            return args[:1]
        if name == "randint":
            if len(args) >= 2 and type(args[-1].value) in (cst.Tuple, cst.List):
                return args[-1:]
            return None
        return args

    def _device_argument(self, node: cst.BaseExpression) -> Value:
        """`device=x.device` places the tensor with `x`; `device=device` (a name or attribute
        that is no CPU literal) on the program's device; other values tell us nothing."""
        if type(node) is cst.Attribute and node.attr.value == "device":
            base = self.value(node.value)
            if isinstance(base, Device):
                return base
            return None
        if _names_a_device(node):
            return Device("")
        return None

    def tensor_function(self, node: cst.Call, qualname: str) -> Value:
        values = [self.value(arg.value) for arg in node.args]
        name = qualname.rpartition(".")[2]
        flat = list(_flatten(values))
        cpus = [v for v in flat if isinstance(v, Cpu)]
        devices = [v for v in flat if isinstance(v, Device)]
        if qualname in CROSS_DEVICE_FUNCTIONS or qualname.startswith(CROSS_DEVICE_PREFIXES) or "cpu" in name:
            return None  # `*_for_cpu` kernels want CPU operands
        device = keyword(node, "device")
        if device is not None:
            # constructors such as sparse_coo_tensor(indices, values, device=d) move their inputs
            return self._device_argument(device.value)
        if cpus and devices:
            device_node = _node_of_value(node.args, values, devices[0])
            for cpu in cpus:
                self.meet(cpu, devices[0], device_node, node)
            return devices[0]
        if devices:
            return devices[0]
        if cpus:
            if name.endswith("_like") or name in ("tril", "triu", "where", "logical_not", "flip", "roll", "abs", "exp", "sigmoid"):
                return cpus[0]
            if name in REDUCTIONS:
                return None
            return Cpu(cpus[0].origin, None)
        return None

    def method_call(self, node: cst.Call, func: cst.Attribute) -> Value:
        method = func.attr.value
        receiver_node = func.value
        if type(receiver_node) is cst.Name and receiver_node.value == self.setup.self_name:
            return self.self_call(node, method)
        receiver = self.value(receiver_node)
        if receiver is None:
            receiver = self.setup.module_of(receiver_node)
        values = [self.value(arg.value) for arg in node.args]
        if isinstance(receiver, Module):
            return self.module_method(node, receiver, receiver_node, method, values)
        if receiver is None and method in ("cuda", "to") and self._moves_to_device(node):
            return Device("", moved=True)  # `x.cuda()`, `batch.to(device)`: whatever it was, now on the device
        if method in NON_TENSOR_METHODS and method != "type":
            return None
        flat = list(_flatten(values))
        if isinstance(receiver, Cpu):
            return self.cpu_method(node, receiver, method, values, flat)
        if isinstance(receiver, Device):
            if method in ("cpu", "numpy", "tolist"):
                return None
            if method == "to" and not self._dtype_only(node):
                # `.to("cpu")` leaves the device, `.to(device)` stays on it, `.to(y)` follows y
                destination = self._destination(node, flat)
                if destination is None and self._moves_to_device(node):
                    return Device("", moved=True)
                return destination
            if method not in TENSOR_ATTRIBUTE_NAMES:
                # Not a tensor method: the receiver is no tensor (`load_model(p).to(device)` is a
                # model). What its method does with the arguments is unknown (no meeting); what
                # it returns is computed on the model's device.
                return receiver
            if method not in CROSS_DEVICE_METHODS and not method.startswith("index_put"):
                for cpu in (v for v in flat if isinstance(v, Cpu)):
                    self.meet(cpu, receiver, receiver_node, node)
            return receiver
        return None

    def module_method(self, node: cst.Call, module: Module, receiver_node, method: str, values: list) -> Value:
        if method in ("cuda", "to") and self._moves_to_device(node):
            moved = Module(module.root or root_of(receiver_node) or "", True)
            if type(receiver_node) is cst.Name:
                self.env[receiver_node.value] = moved  # modules move in place: `model.cuda()`
            return moved
        if method in ("forward", "__call__"):
            return self.apply_module(module, node, values)
        if method in ("train", "eval", "float", "half", "double", "bfloat16", "requires_grad_", "share_memory"):
            return module
        return None

    def _moves_to_device(self, node: cst.Call) -> bool:
        """`.cuda()`, `.to(device)`, `.to("cuda")`: not `.to("cpu")`, not a dtype-only `.to`."""
        func = node.func
        if type(func) is cst.Attribute and func.attr.value == "cuda":
            return True
        if not node.args or self._dtype_only(node):
            return False
        first = node.args[0]
        if first.keyword is not None and first.keyword.value != "device":
            device = keyword(node, "device")
            return device is not None and _names_a_device(device.value)
        return _names_a_device(first.value)

    def cpu_method(self, node: cst.Call, receiver: Cpu, method: str, values: list, flat: list) -> Value:
        devices = [v for v in flat if isinstance(v, Device)]
        if method in MOVING_METHODS:
            if method == "to" and self._dtype_only(node):
                return receiver
            destination = self._destination(node, flat)
            if destination is None and method in ("cuda", "to") and self._moves_to_device(node):
                return Device("", moved=True)
            return destination
        if method.startswith("new_"):
            return None
        if devices and method not in CROSS_DEVICE_METHODS:
            device_node = _node_of_value(node.args, values, devices[0])
            self.meet(receiver, devices[0], device_node, node)
            for cpu in (v for v in flat if isinstance(v, Cpu)):
                self.meet(cpu, devices[0], device_node, node)
            return devices[0]
        if method == "unsqueeze":
            return Cpu(receiver.origin, None if receiver.ndim is None else receiver.ndim + 1)
        if method in SAME_NDIM_METHODS:
            return receiver if method not in ("expand_as", "view_as", "reshape_as") else Cpu(receiver.origin, None)
        if method in RESHAPE_METHODS:
            count = size_count(positional(node))
            return Cpu(receiver.origin, count) if count != 0 else None
        if method == "flatten":
            return Cpu(receiver.origin, 1 if not node.args else None)
        if method in REDUCTIONS:
            return self._reduced(node, receiver)
        return None

    def _destination(self, node: cst.Call, flat: list) -> Value:
        """Where `.to(...)`/`.type_as(...)` sends a tensor: with `y` for `.to(y)` or
        `.to(y.device)`; unknown otherwise (`.to("cpu")`, `.to(device)`)."""
        for value in flat:
            if isinstance(value, Device):
                return value
        for arg in node.args:
            if type(arg.value) is cst.Attribute and arg.value.attr.value == "device":
                moved = self._device_argument(arg.value)
                if moved is not None:
                    return moved
        return None

    def _reduced(self, node: cst.Call, receiver: Cpu) -> Value:
        if not node.args or receiver.ndim is None:
            return None
        keepdim = keyword(node, "keepdim")
        if keepdim is not None and type(keepdim.value) is cst.Name and keepdim.value.value == "True":
            return receiver
        ndim = receiver.ndim - 1
        return Cpu(receiver.origin, ndim) if ndim > 0 else None

    def _dtype_only(self, node: cst.Call) -> bool:
        """`.to(torch.float32)`, `.to(x.dtype)`, `.to(dtype=...)` change the type, not the device."""
        if not node.args:
            return False
        for arg in node.args:
            if arg.star:
                return False
            if arg.keyword is not None:
                if arg.keyword.value not in ("dtype", "non_blocking", "copy", "memory_format"):
                    return False
                continue
            value = arg.value
            if type(value) is cst.Attribute and value.attr.value == "dtype":
                continue
            if type(value) is cst.Name and value.value == "dtype":
                continue
            if self.setup.qualname(value) in TORCH_DTYPES:
                continue
            return False
        return True

    def self_call(self, node: cst.Call, method: str) -> Value:
        """`self.embed(pos)`: a submodule's parameters are on the model's device."""
        values = [self.value(arg.value) for arg in node.args]
        if method not in self.setup.self_modules:
            return self.setup.returns(node)
        flat = list(_flatten(values))
        cpus = [v for v in flat if isinstance(v, Cpu)]
        devices = [v for v in flat if isinstance(v, Device)]
        root = devices[0].root if devices else self._first_param_root() or f"self.{method}"
        for cpu in cpus:
            self.meetings.setdefault(id(cpu.origin), Meeting(cpu, f"self.{method}", root, node, self.setup.body))
        return Device(root)

    def _first_param_root(self) -> Optional[str]:
        for root in self.setup.tensor_params.values():
            return root
        return None


def _named(value: Value, name: str) -> Value:
    """A module bound to a name is read through it from then on. (A device tensor keeps its
    root: only a parameter's or attribute's is sure to be a tensor, and it names the fix.)"""
    if isinstance(value, Module) and not value.root:
        return Module(name, value.moved)
    return value


#: When the arms of an `if` disagree, the joined value is the first kind here that one of
#: them holds: a CPU tensor on any path is a CPU tensor on that path.
@functools.cache
def _literal_types() -> frozenset[type]:
    """Literals: no tensor, nothing inside them to read. Made on first use: touching libcst's
    classes at import would load libcst for runs that parse nothing."""
    return frozenset({cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.Ellipsis})


def _rank(value: Value) -> int:
    if isinstance(value, Cpu):
        return 0
    if isinstance(value, Seq):
        return 1
    if isinstance(value, Device):
        return 2
    if isinstance(value, Module):
        return 3
    return 4


def joined_return(returned: list) -> Value:
    """What a function gives its callers: the CPU-most of its `return` values.

    Only CPU tensors cross: a helper's device tensors are on the device only if its caller's
    arguments are, which the helper's own reading assumes rather than knows."""
    best = min(returned, key=_rank, default=None)
    if isinstance(best, Seq):
        items = tuple(v if isinstance(v, Cpu) else None for v in best.items)
        return Seq(items) if any(items) else None
    return best if isinstance(best, Cpu) else None


def _moved(value: Value) -> bool:
    return isinstance(value, Device) and value.moved


def _join(first: dict, second: dict, entry: dict) -> dict:
    """The may-join of two arms' environments. A CPU tensor one arm made wins (it is one on
    that path); but an arm that *moved* a CPU tensor it got from the entry wins over one that
    left it: `if mask.is_cuda: filler = filler.cuda()` tests the device it moves to."""
    joined = dict(first)
    for name in first.keys() | second.keys():
        a, b = first.get(name), second.get(name)
        before = entry.get(name)
        if isinstance(before, Cpu) and _moved(a) != _moved(b) and (a is before or b is before):
            joined[name] = a if _moved(a) else b
        elif _rank(b) < _rank(a):
            joined[name] = b
        else:
            joined[name] = a
        if joined[name] is None:
            joined.pop(name)
    return joined


def _is_zero_size(node: cst.BaseExpression) -> bool:
    if type(node) is cst.Integer:
        return node.value == "0"
    if type(node) in (cst.List, cst.Tuple) and node.elements:
        return all(_is_zero_size(element.value) for element in node.elements)
    return False


def _sized_normal(node: cst.Call) -> bool:
    """`torch.normal(0.0, 1.0, size=(n,))` is a factory; `torch.normal(mean_t, std_t)` follows
    its tensor arguments."""
    if keyword(node, "size") is not None:
        return True
    args = positional(node)
    return len(args) >= 3 and is_literal(args[0].value) and is_literal(args[1].value)


def _is_module_class(qualname: str) -> bool:
    """`torch.nn.Linear`, `torch.nn.Sequential`: building one makes a module."""
    if not qualname.startswith("torch.nn.") or qualname.startswith(("torch.nn.functional.", "torch.nn.init.", "torch.nn.utils.")):
        return False
    last = qualname.rpartition(".")[2]
    return last[:1].isupper() and last not in ("Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer")


def _names_a_device(node: cst.BaseExpression) -> bool:
    """A device argument that is no CPU: `device`, `self.device`, `args.device`, `"cuda"`,
    `torch.device("cuda")`, `f"cuda:{rank}"`, `rank` — not `"cpu"` nor `torch.device("cpu")`."""
    if type(node) is cst.SimpleString:
        text = node.evaluated_value
        return isinstance(text, str) and not text.startswith("cpu")
    if type(node) is cst.FormattedString:
        return "cpu" not in "".join(p.value for p in node.parts if type(p) is cst.FormattedStringText)
    if type(node) is cst.Call:
        args = node.args
        return (
            bool(args)
            and (dotted_name(node.func) or "").endswith("device")
            and _names_a_device(args[0].value)
        )
    if type(node) is cst.Name:
        return node.value not in ("None", "True", "False") and "cpu" not in node.value.lower()
    if type(node) is cst.Attribute:
        return "cpu" not in node.attr.value.lower() and node.attr.value not in ("dtype",)
    if type(node) is cst.Integer:
        return True  # `.to(0)`, `.cuda(1)`: a CUDA ordinal
    return False


def _flatten(values) -> Iterator[Value]:
    for value in values:
        if isinstance(value, Seq):
            yield from _flatten(value.items)
        else:
            yield value


def _node_of_value(args, values, wanted) -> Optional[cst.BaseExpression]:
    """The argument expression that produced `wanted` (for naming it in the message)."""
    for arg, value in zip(args, values):
        if value is wanted:
            return arg.value
        if isinstance(value, Seq):
            container = arg.value
            if type(container) in (cst.List, cst.Tuple):
                for element, item in zip(container.elements, value.items):
                    if item is wanted:
                        return element.value
    return None
