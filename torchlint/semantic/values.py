"""The abstract values of the semantic model.

Two families:

* concrete values, what an expression may be: a tensor with a known property (`Tensor`),
  a layer whose output has one (`Layer`), a loss module, a user class, an instance of it,
  a function, a bound method, a sequence of values, or something defined in another file
  (`External`, decided by the project phase);
* symbolic values, what an expression refers to while the file is still being read: a local
  name at a point of the code, `self.<attr>`, a module-level name, a parameter, the result
  of a call, an element of a tuple. The model resolves them once the whole file is known.

An expression's meaning is a *may-set*: every concrete value it may have on some path. An
empty set means "nothing known", never "nothing": rules report only what is in the set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Tuple, Union


# -- where a property comes from ------------------------------------------------------------
@dataclass(frozen=True)
class Origin:
    """The expression that made a value what it is (compared by identity of its node).

    `text` is how messages name it (`F.softmax(...)`); `node` locates it in this file;
    `path`/`line` locate it in another file (values that crossed files); `via` names the
    model class whose `forward` returned it. `label` is that text, or a `SourceLabel` that
    renders it from the source when a message asks (most origins never reach a message)."""

    label: Any
    node: Any = None
    path: str = ""
    line: int = 0
    via: str = ""

    @property
    def text(self) -> str:
        label = self.label
        return label if type(label) is str else label.render()

    def through(self, via: str) -> Origin:
        return Origin(self.label, self.node, self.path, self.line, via or self.via)


@dataclass(frozen=True)
class SourceLabel:
    """A call named by its callee's source, shortened: `F.softmax(...)`, `.softmax(...)`."""

    # Out of repr: values are sorted by repr, and a module's repr prints its whole tree.
    module: Any = field(repr=False)
    node: Any = field(repr=False)

    def render(self) -> str:
        text = self.module.code_for_node(self.node)
        if len(text) > 40 or "\n" in text:
            text = "." + text.rpartition(".")[2] if "." in text else text[:40]
        return f"`{text}(...)`"


# -- concrete values ------------------------------------------------------------------------
#: Tensor properties the model tracks: softmax probabilities, log-probabilities, sigmoid
#: output, and `exp` output (half of a hand-written softmax).
PROB, LOGPROB, SIGMOID, EXP = "prob", "logprob", "sigmoid", "exp"
#: A layer that passes its input through (Dropout, Flatten, Identity).
IDENTITY = "identity"
#: Output of another op autograd saves for its backward (relu, tanh, sqrt, ...).
SAVED = "saved"
#: Every kind whose tensor autograd saves when the op that made it ran with grad enabled.
SAVED_KINDS = frozenset({PROB, LOGPROB, SIGMOID, EXP, SAVED})
#: A selector: one 1 per row, zeros elsewhere (`F.one_hot(...)`, zeros scattered with 1). A
#: matrix product with it picks rows (or columns) of the other factor, values unchanged.
ONE_HOT = "one_hot"
#: `torch.zeros(...)` / `torch.zeros_like(...)`: what a selector is scattered into.
ZEROS = "zeros"


@dataclass(frozen=True)
class Tensor:
    """A tensor with a property (`kind`) that `origin` gave it. `recorded` is False when the
    op ran under `no_grad`/`inference_mode`: autograd saved nothing for it."""

    kind: str
    origin: Origin
    recorded: bool = True
    #: Made by calling a layer object (`self.act(x)`), whose class the model knows but whose
    #: construction may depend on arguments it does not evaluate (`ReLU() if relu else Identity()`).
    from_layer: bool = False


@dataclass(frozen=True)
class Layer:
    """A module whose output is a `Tensor` of `kind`: nn.Softmax, nn.Sigmoid, nn.LogSoftmax,
    or an nn.Sequential ending in one."""

    kind: str
    origin: Origin
    #: Built with `inplace=True`: calling it also turns its argument into its output.
    inplace: bool = False


@dataclass(frozen=True)
class LossModule:
    kind: str  # "cross_entropy", "nll", "bce"


@dataclass(frozen=True)
class ClassRef:
    """A class: defined in this file (`name`), imported absolutely (`qualname`), relatively
    (`level`, `target`), or through `from <module> import *` (`star`, `name`)."""

    name: str = ""
    qualname: str = ""
    level: int = 0
    target: str = ""
    star: Tuple[Tuple[int, str], ...] = ()

    @property
    def local(self) -> bool:
        return bool(self.name) and not self.star


@dataclass(frozen=True)
class ClassObj:
    ref: ClassRef


@dataclass(frozen=True)
class Instance:
    ref: ClassRef


@dataclass(frozen=True)
class FunctionObj:
    """A function of this file: `("", name)` at module level, `(class, name)` a method."""

    owner: str
    name: str


@dataclass(frozen=True)
class BoundMethod:
    cls: str
    name: str


@dataclass(frozen=True)
class Sequence:
    """A tuple, list, nn.Sequential, nn.ModuleList or nn.ModuleDict of (symbolic) values."""

    kind: str  # "tuple", "list", "sequential", "modulelist", "moduledict"
    items: Tuple["Value", ...]


@dataclass(frozen=True)
class External:
    """Something another file decides, in JSON form (see torchlint.semantic.project)."""

    #: Nested tuples: ("global", ClassRef) an imported name; ("instance", ClassRef) an instance
    #: of an imported class; ("forward", ClassRef) what such an instance returns; ("call", ref)
    #: what calling `ref` returns; ("item", ref, index); ("attr", ref, name); ("param", owner,
    #: function, index, name) a parameter only other files pass.
    ref: Any


# -- symbolic values ------------------------------------------------------------------------
@dataclass(frozen=True)
class Local:
    """The name `name` as seen at one point (`order`, `path`) of the scope `scope`."""

    scope: int
    name: str
    path: tuple
    order: int


@dataclass(frozen=True)
class SelfAttr:
    cls: str
    attr: str


@dataclass(frozen=True)
class GlobalName:
    name: str


@dataclass(frozen=True)
class Param:
    """A parameter of a function of this file (`index` counts `self` for methods)."""

    owner: str
    function: str
    index: int
    name: str


@dataclass(frozen=True)
class Applied:
    """What calling `callee` returns. `flags`: the call's literal `True`/`False` keyword
    arguments, and how many positional arguments it passes (`("#positional", n)`), which
    choose among returns made under `if flag:` in the callee."""

    callee: "Value"
    flags: tuple = ()


@dataclass(frozen=True)
class Item:
    """Element `index` of a sequence (None: any element), or the tensor itself when indexed."""

    value: "Value"
    index: Optional[Union[int, str]]


@dataclass(frozen=True)
class Attr:
    """Attribute `name` of a value (`model.head` where `model` is an instance)."""

    value: "Value"
    name: str


@dataclass(frozen=True)
class Quotient:
    """`numerator / denominator.sum(...)`: a softmax when both are the same `exp` output."""

    numerator: "Value"
    summed: "Value"
    origin: Origin


@dataclass(frozen=True)
class Product:
    """`torch.bmm(a, b)`, `torch.matmul(a, b)`, `a.bmm(b)`, `a @ b`: still probabilities (or
    log-probabilities) when the other factor is a one-hot selector; nothing known otherwise."""

    left: "Value"
    right: "Value"


@dataclass(frozen=True)
class Scattered:
    """`sel.scatter_(dim, index, 1)` (or `scatter`): a one-hot selector when `sel` is zeros."""

    value: "Value"
    origin: Origin


@dataclass(frozen=True)
class Copied:
    """`x.clone()` / `x.detach()`: the same values, in a tensor autograd did not save."""

    value: "Value"


@dataclass(frozen=True)
class Union_:
    """Either of several values (`a if c else b`)."""

    options: Tuple["Value", ...]


@dataclass(frozen=True)
class Deferred:
    """The value of an expression the model read but evaluates only when asked (`key`: its
    place in the model's list of deferred expressions, with the traversal state they need).
    Most assignments are never asked about; evaluating each as it is read cost a tenth of a
    parse."""

    key: int


Value = Any  # any of the classes above
CONCRETE = (Tensor, Layer, LossModule, ClassObj, Instance, FunctionObj, BoundMethod, Sequence, External)


# -- autograd: leaves, views and layers with parameters -------------------------------------------
#: A leaf that requires grad: an `nn.Parameter`, `torch.zeros(..., requires_grad=True)`,
#: `x.requires_grad_()`, or the parameter of a layer (`self.fc.weight`). An in-place op on it
#: outside `no_grad` raises at once.
LEAF = "leaf"
#: One output of an op that returns several views of its input (`chunk`, `split`, `unbind`).
#: An in-place op on it raises at once when its base requires grad.
MULTI_VIEW = "multi_view"
#: The output of a layer that has parameters (`nn.Linear`, a convolution...): it requires grad
#: whenever the layer ran with grad enabled and its parameters were not frozen.
GRAD = "grad"


@dataclass(frozen=True)
class NNModule:
    """An instance of a torch.nn layer the model tracks no output property of (`nn.Linear`,
    `nn.Conv2d`, `nn.GELU`...). `parametric`: it owns parameters (`weight`, `bias`)."""

    qualname: str
    origin: Origin
    parametric: bool


@dataclass(frozen=True)
class Split:
    """`base.chunk(...)`, `torch.split(base, ...)`: views of `base`, several at once. Resolves
    to a `Tensor(MULTI_VIEW)` when `base` may require grad."""

    base: "Value"
    origin: Origin
    recorded: bool = True
    #: What the call means when `base` is no such tensor (`text.split(",")`, an object's own
    #: `split` method).
    fallback: "Value" = None


@dataclass(frozen=True)
class View:
    """`base.t()`, `base.narrow(...)`, `base.T`: a view of `base`, which keeps being a leaf that
    requires grad, or a multi-output view, for in-place purposes. Anything else: `fallback`."""

    base: "Value"
    fallback: "Value" = None


#: `Item.index` of an index that may copy (a tensor, a mask, a name): not a view of a leaf.
COPYING_INDEX = "\0copying"


@dataclass(frozen=True)
class InPlace:
    """`x` after a statement that applies an op to it in place (`x.sigmoid_()`,
    `F.relu(x, inplace=True)`, `self.act(x)` with an in-place layer): what `x` was (`before`),
    and, when the op saves its output, that output (`op`: a Tensor, or a layer called)."""

    before: "Value"
    op: "Value"


@dataclass(frozen=True)
class Returned:
    """An element of a tuple a call returned: the same values, with leaves no longer vouched
    for (see `model._returned`)."""

    value: "Value"


@dataclass(frozen=True)
class MayCopy:
    """`x.contiguous()`, `x.reshape(...)`, `x.flatten()`: the same values, maybe in a copy. A
    copy of one of several views is an ordinary tensor (the view's kind is kept, not
    `recorded`)."""

    value: "Value"
