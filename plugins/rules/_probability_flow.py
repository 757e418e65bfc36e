"""Where do softmax probabilities flow? One analysis per file, read by TL101, TL102 and TL107.

The rules ask one question: does a loss that expects logits (`cross_entropy`) or
log-probabilities (`nll_loss`), or a logarithm, receive softmax output? The answer needs a
small dataflow analysis. `ProbabilityFlow` is an engine analysis (torchlint.analysis): it is
built once per file for all the rules that read it, runs during the single traversal, and
records every loss call with the abstract value of its input; each rule then judges the calls
of its own loss kind in ``finish()``. (TL106 reads `SigmoidFlow`, the same analysis with
sigmoid as the source.)

* Expressions are given abstract values (below). Most are known on the spot (`F.softmax(x, 1)`
  is probabilities); some name things that are only known after the whole file has been
  read, such as `self.head` (assigned in `__init__`), a module-level `criterion`, or what
  `Net.forward` returns. Those stay symbolic (`SelfAttr`, `GlobalName`, `Applied`) and are
  resolved at the end.
* Local variables are tracked per scope in source order. A binding remembers the suite path
  (the nested `if`/`for`/`try` blocks) it was made in; a use only sees it when that path is a
  prefix of the use's own path, so `if not self.training: out = out.softmax(-1)` does not
  taint a later use of `out` outside the `if`. Any assignment of something else clears the
  name, wherever it happens.
* `Net.forward` returns probabilities only when every one of its `return` statements does.
* An instance of a class imported from another file is recorded as a fact (`loss_input`);
  every class whose forward returns probabilities is a fact too (`prob_class`), and
  ``project_check`` joins the two.

Precision first: anything not understood evaluates to "unknown" and is never reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Optional, Union

import libcst as cst

from torchlint.analysis import Analysis
from torchlint.fix import NodeFix
from torchlint.rule import Rule
from torchlint.static.context import make_finding
from torchlint.static.names import dotted_name

from ._bindings import BindingEvents, innermost_scope_index, suite_path
from ._calls import argument

if TYPE_CHECKING:
    from torchlint.findings import Finding
    from torchlint.static.context import ProjectContext

SOFTMAX_FUNCTIONS = frozenset(
    {
        "torch.nn.functional.softmax",
        "torch.softmax",
        "torch.special.softmax",
        "torch.Tensor.softmax",
    }
)
SOFTMAX_MODULES = frozenset(
    {
        "torch.nn.Softmax",
        "torch.nn.Softmax2d",
        "torch.nn.modules.Softmax",
        "torch.nn.modules.Softmax2d",
        "torch.nn.modules.activation.Softmax",
        "torch.nn.modules.activation.Softmax2d",
    }
)
SEQUENTIAL = frozenset({"torch.nn.Sequential", "torch.nn.modules.Sequential", "torch.nn.modules.container.Sequential"})
#: Wrappers whose forward is the wrapped module's forward.
MODULE_WRAPPERS = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.compile",
    }
)
#: Methods that keep a tensor's values (shape, dtype, device or autograd changes only), or
#: return the same module.
PASSTHROUGH_METHODS = frozenset(
    {
        "view", "view_as", "reshape", "reshape_as", "flatten", "squeeze", "unsqueeze", "permute",
        "transpose", "contiguous", "to", "float", "double", "half", "bfloat16", "cuda", "cpu",
        "clone", "detach", "eval", "train", "requires_grad_",
    }
)
#: torch functions that keep their first argument's values.
PASSTHROUGH_FUNCTIONS = frozenset(
    {
        "torch.flatten", "torch.reshape", "torch.squeeze", "torch.unsqueeze", "torch.permute",
        "torch.transpose", "torch.clone", "torch.detach",
    }
)


#: Functional losses whose INPUT a rule judges, and their kind (each rule guards one kind).
LOSS_FUNCTIONS = {
    "torch.nn.functional.cross_entropy": "cross_entropy",
    "torch.nn.functional.nll_loss": "nll",
    "torch.nn.functional.binary_cross_entropy": "bce",
}
#: Loss module classes, and their kind.
LOSS_MODULES = {
    **dict.fromkeys(
        ("torch.nn.CrossEntropyLoss", "torch.nn.modules.CrossEntropyLoss", "torch.nn.modules.loss.CrossEntropyLoss"),
        "cross_entropy",
    ),
    **dict.fromkeys(
        (
            "torch.nn.NLLLoss",
            "torch.nn.NLLLoss2d",
            "torch.nn.modules.NLLLoss",
            "torch.nn.modules.loss.NLLLoss",
            "torch.nn.modules.loss.NLLLoss2d",
        ),
        "nll",
    ),
    **dict.fromkeys(("torch.nn.BCELoss", "torch.nn.modules.BCELoss", "torch.nn.modules.loss.BCELoss"), "bce"),
}


# -- abstract values ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Origin:
    """Where probabilities come from: the softmax call or module (compared by identity)."""

    text: str  # "`F.softmax(...)`"
    node: cst.CSTNode
    via: str = ""  # "Net" when reached through `Net.forward`


@dataclass(frozen=True)
class Prob:
    """A tensor of softmax probabilities."""

    origin: Origin


@dataclass(frozen=True)
class ProbModule:
    """A module whose output is probabilities: nn.Softmax, an nn.Sequential ending in one."""

    origin: Origin


@dataclass(frozen=True)
class LossModule:
    kind: str  # "cross_entropy" or "nll"


@dataclass(frozen=True)
class ClassRef:
    """A class: local (`name`), imported absolutely (`qualname`) or relatively (`level`, `target`)."""

    name: str = ""
    qualname: str = ""
    level: int = 0
    target: str = ""

    @property
    def local(self) -> bool:
        return bool(self.name)


@dataclass(frozen=True)
class ClassObj:
    ref: ClassRef


@dataclass(frozen=True)
class Instance:
    ref: ClassRef


@dataclass(frozen=True)
class External:
    """The output of an instance of a class from another file: decided in project_check."""

    ref: ClassRef


@dataclass(frozen=True)
class Applied:
    """What calling `callee` returns (known once the file has been read)."""

    callee: "Value"


@dataclass(frozen=True)
class SelfAttr:
    cls: str
    attr: str


@dataclass(frozen=True)
class GlobalName:
    name: str


@dataclass(frozen=True)
class Param:
    """A parameter of a module-level function: what every call in this file passes."""

    function: str
    index: int
    name: str


Value = Union[Prob, ProbModule, LossModule, ClassObj, Instance, External, Applied, SelfAttr, GlobalName, Param]


@dataclass
class CallSite:
    positional: list[Optional[Value]]
    keywords: dict[str, Optional[Value]]
    has_star: bool


@dataclass
class ClassInfo:
    node: cst.ClassDef
    bases: tuple[str, ...]
    #: attribute -> values assigned to `self.<attr>` in any method, or in the class body.
    attrs: dict[str, list[Optional[Value]]]
    #: values of `forward`'s return statements; None when the class defines no forward.
    returns: Optional[list[Optional[Value]]] = None


@dataclass
class LossCall:
    node: cst.Call
    callee: Optional[Value]  # the loss module called; None for the functional form
    label: str  # how the message names the call; "" for the rule's own wording of the loss
    value: Value  # the INPUT argument's value
    kind: str = ""  # the functional form's loss kind (LOSS_FUNCTIONS); a module's is its callee's


Binding = tuple[Optional[Value], tuple[int, ...]]

#: What opens a scope (type names: libcst must not load at import time). Lambdas are not
#: followed, so they do not open one.
_SCOPES = frozenset({"FunctionDef", "ClassDef", "Module"})


def _looks_like_dim(call: cst.Call) -> bool:
    """`Tensor.softmax(dim)` takes a dimension: an int, `-1`, or a name mentioning dim/axis.
    Anything else (`obj.softmax(x)`) is probably some other object's method."""
    if any(arg.keyword is not None and arg.keyword.value == "dim" for arg in call.args):
        return True
    positional = [arg for arg in call.args if arg.keyword is None]
    if not positional:
        return not call.args
    first = positional[0].value
    if isinstance(first, cst.UnaryOperation) and isinstance(first.operator, cst.Minus):
        first = first.expression
    if isinstance(first, cst.Integer):
        return True
    name = dotted_name(first)
    if name is None:
        return False
    last = name.rpartition(".")[2].lower()
    return "dim" in last or "axis" in last


class ProbabilityFlow(BindingEvents, Analysis):
    """The dataflow of one file: abstract values of expressions, and every loss call's input."""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._envs: dict[int, dict[str, Binding]] = {}
        self._module_assignments: dict[str, list[Optional[Value]]] = {}
        self._module_classes: set[str] = set()
        self._classes: dict[str, ClassInfo] = {}
        self._ambiguous_classes: set[str] = set()
        #: Every call of a known loss (any kind) whose input has a value, in source order.
        self.loss_calls: list[LossCall] = []
        self._module_functions: dict[str, int] = {}
        self._call_sites: dict[str, list[CallSite]] = {}
        self._probability_classes: Optional[list[tuple[str, Origin]]] = None

    # -- scopes and suite paths ---------------------------------------------------------------
    def _scope_index(self) -> int:
        return innermost_scope_index(self.ctx.ancestors, _SCOPES)

    def _scope(self) -> cst.CSTNode:
        return self.ctx.ancestors[self._scope_index()]

    def _path(self) -> tuple[int, ...]:
        """The ids of the branch blocks between the current scope and the current node."""
        return suite_path(self.ctx.ancestors, self._scope_index())

    def _method_class(self) -> tuple[str, str] | None:
        """(class name, name of `self`) when inside an ordinary method of a tracked class."""
        function = self.ctx.enclosing_function()
        cls = self.ctx.enclosing_class()
        if function is None or cls is None:
            return None
        for decorator in function.decorators:
            if dotted_name(decorator.decorator) in ("staticmethod", "classmethod"):
                return None
        params = function.params.posonly_params or function.params.params
        if not params:
            return None
        return cls.name.value, params[0].name.value

    # -- binding ----------------------------------------------------------------------------
    def _bind(self, name: str, value: Optional[Value]) -> None:
        scope = self._scope()
        self._envs.setdefault(id(scope), {})[name] = (value, self._path())
        if isinstance(scope, cst.Module):
            self._module_assignments.setdefault(name, []).append(value)
        elif isinstance(scope, cst.ClassDef):
            info = self._classes.get(scope.name.value)
            if info is not None and info.node is scope:
                info.attrs.setdefault(name, []).append(value)

    def bind_target(self, target: cst.BaseExpression, value: Optional[Value]) -> None:
        if isinstance(target, cst.Name):
            self._bind(target.value, value)
        elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
            method = self._method_class()
            if method is not None and target.value.value == method[1]:
                info = self._classes.get(method[0])
                if info is not None:
                    # Only modules are tracked on self: tensors stored there are not followed.
                    kept = value if isinstance(value, (ProbModule, LossModule, Instance, Applied, SelfAttr, GlobalName, Param)) else None
                    info.attrs.setdefault(target.attr.value, []).append(kept)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.bind_target(element.value, None)
        elif isinstance(target, cst.StarredElement):
            self.bind_target(target.value, None)

    # -- evaluation -------------------------------------------------------------------------
    def _lookup(self, name: str) -> Optional[Value]:
        scope_index = self._scope_index()
        scope = self.ctx.ancestors[scope_index]
        env = self._envs.get(id(scope), {})
        if name in env:
            value, bound_at = env[name]
            here = self._path()
            return value if here[: len(bound_at)] == bound_at else None
        if isinstance(scope, cst.Module):
            return GlobalName(name)
        method = self._method_class()
        if method is not None and name == method[1]:
            return Instance(ClassRef(name=method[0]))
        parameter = self._parameter(scope_index, name)
        if parameter is not None:
            return parameter
        # A name bound anywhere in an enclosing function is that function's, not the module's.
        for ancestor in self.ctx.ancestors[: scope_index + 1]:
            if isinstance(ancestor, cst.FunctionDef) and name in self.ctx.bindings_of(ancestor):
                return None
        return GlobalName(name)

    def _parameter(self, scope_index: int, name: str) -> Optional[Param]:
        """A positional parameter of a function defined at module level (not a method)."""
        function = self.ctx.ancestors[scope_index]
        if not isinstance(function, cst.FunctionDef) or not isinstance(self.ctx.ancestors[scope_index - 1], cst.Module):
            return None
        params = (*function.params.posonly_params, *function.params.params)
        for index, param in enumerate(params):
            if param.name.value == name:
                return Param(function.name.value, index, name)
        return None

    def _record_call_site(self, node: cst.Call) -> None:
        """Arguments of calls to plain names, for resolving the callee's parameters later."""
        if not isinstance(node.func, cst.Name) or self.ctx.qualname(node.func) is not None:
            return
        site = CallSite([], {}, any(arg.star for arg in node.args))
        if not site.has_star:
            for arg in node.args:
                value = self.evaluate(arg.value)
                if arg.keyword is None:
                    site.positional.append(value)
                else:
                    site.keywords[arg.keyword.value] = value
        self._call_sites.setdefault(node.func.value, []).append(site)

    def _imported_class(self, func: cst.BaseExpression) -> Optional[ClassRef]:
        qualname = self.ctx.qualname(func)
        if qualname is not None:
            if qualname.split(".")[0] == "torch" or not qualname.rpartition(".")[2][:1].isupper():
                return None
            return ClassRef(qualname=qualname)
        if isinstance(func, cst.Name) and func.value in self.ctx.aliases.relative_imports:
            function = self.ctx.enclosing_function()
            if function is not None and func.value in self.ctx.bindings_of(function):
                return None
            level, target = self.ctx.aliases.relative_imports[func.value]
            return ClassRef(level=level, target=target)
        return None

    def _origin(self, node: cst.CSTNode, func: cst.BaseExpression) -> Origin:
        text = self.ctx.module.code_for_node(func)
        if len(text) > 40 or "\n" in text:
            text = "." + text.rpartition(".")[2] if "." in text else text[:40]
        return Origin(f"`{text}(...)`", node)

    def evaluate(self, expr: cst.BaseExpression) -> Optional[Value]:
        if isinstance(expr, cst.Name):
            if self.ctx.qualname(expr) is not None:
                return None
            return self._lookup(expr.value)
        if isinstance(expr, cst.Attribute):
            if isinstance(expr.value, cst.Name):
                method = self._method_class()
                if method is not None and expr.value.value == method[1]:
                    return SelfAttr(method[0], expr.attr.value)
            return None
        if isinstance(expr, cst.Subscript):
            return self._tensor_only(self.evaluate(expr.value))
        if isinstance(expr, cst.Call):
            return self._evaluate_call(expr)
        if isinstance(expr, cst.IfExp):
            body, orelse = self.evaluate(expr.body), self.evaluate(expr.orelse)
            return body if isinstance(body, Prob) and isinstance(orelse, Prob) else None
        if isinstance(expr, cst.NamedExpr):
            return self.evaluate(expr.value)
        return None

    @staticmethod
    def _tensor_only(value: Optional[Value]) -> Optional[Value]:
        return value if isinstance(value, (Prob, Applied, GlobalName, Param)) else None

    def _evaluate_call(self, call: cst.Call) -> Optional[Value]:
        func = call.func
        qualname = self.ctx.qualname(func)
        if qualname is not None:
            return self._evaluate_qualified_call(call, qualname)
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver = func.value
            if method == "softmax":
                return self.method_softmax(call, receiver)
            if method in PASSTHROUGH_METHODS:
                return self.evaluate(receiver)
            if method == "forward":
                callee = self.evaluate(receiver)
                return Applied(callee) if callee is not None else None
        imported = self._imported_class(func)
        if imported is not None:
            return Instance(imported)
        callee = self.evaluate(func)
        if callee is None or isinstance(callee, (Prob, LossModule)):
            return None
        return Applied(callee)

    def _evaluate_qualified_call(self, call: cst.Call, qualname: str) -> Optional[Value]:
        if qualname in SOFTMAX_FUNCTIONS:
            return Prob(self._origin(call, call.func))
        if qualname in SOFTMAX_MODULES:
            return ProbModule(self._origin(call, call.func))
        if qualname in LOSS_MODULES:
            return LossModule(LOSS_MODULES[qualname])
        if qualname in PASSTHROUGH_FUNCTIONS:
            first = argument(call, "input", 0)
            return self._tensor_only(self.evaluate(first.value)) if first is not None else None
        if qualname in SEQUENTIAL:
            return self._sequential(call)
        if qualname in MODULE_WRAPPERS:
            first = argument(call, "module", 0) or argument(call, "model", 0)
            return self.evaluate(first.value) if first is not None else None
        imported = self._imported_class(call.func)
        return Instance(imported) if imported is not None else None

    def method_softmax(self, call: cst.Call, receiver: cst.BaseExpression) -> Optional[Value]:
        """`x.softmax(1)`: Tensor.softmax (probabilities), unless the receiver is a module-like object."""
        if isinstance(receiver, cst.Name):
            method = self._method_class()
            if method is not None and receiver.value == method[1]:
                return Applied(SelfAttr(method[0], "softmax"))  # an attribute or method of the module
            if receiver.value in self.ctx.aliases.relative_imports:
                return None
        head = dotted_name(receiver)
        if head is not None and self.ctx.aliases.resolve(head) is not None:
            return None  # `some_module.softmax(...)` of a non-torch library
        if not _looks_like_dim(call):
            return None
        return Prob(self._origin(call, call.func))

    def _sequential(self, call: cst.Call) -> Optional[Value]:
        """An nn.Sequential computes what its last layer computes."""
        layers = [arg for arg in call.args if arg.keyword is None]
        if not layers or layers[-1].star:
            return None
        last = self.evaluate(layers[-1].value)
        if isinstance(last, ProbModule):
            return ProbModule(Origin(f"`nn.Sequential` ending in {last.origin.text}", last.origin.node))
        if isinstance(last, Instance):
            return last
        return None

    # -- visitors ---------------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        name = node.name.value
        bases = tuple(dotted_name(arg.value) or "" for arg in node.bases if arg.keyword is None)
        if name in self._classes or name in self._ambiguous_classes:
            self._classes.pop(name, None)
            self._ambiguous_classes.add(name)
        else:
            self._classes[name] = ClassInfo(node, bases, {})

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        if isinstance(self._scope(), cst.Module):
            self._module_classes.add(node.name.value)
        else:
            self._bind(node.name.value, None)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        scope = self._scope()
        if node.name.value == "forward" and isinstance(scope, cst.ClassDef):
            info = self._classes.get(scope.name.value)
            if info is not None and info.node is scope and info.returns is None:
                info.returns = []  # the class defines forward: its returns decide

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        if isinstance(self._scope(), cst.Module):
            name = node.name.value
            self._module_functions[name] = self._module_functions.get(name, 0) + 1
        self._bind(node.name.value, None)

    def value_of(self, expr: cst.BaseExpression) -> Optional[Value]:
        return self.evaluate(expr)

    def visit_Return(self, node: cst.Return) -> None:
        function = self.ctx.enclosing_function()
        if function is None or function.name.value != "forward":
            return
        if not isinstance(self._scope(), cst.FunctionDef):
            return
        method = self._method_class()
        info = self._classes.get(method[0]) if method is not None else None
        if info is None or info.returns is None or self.ctx.enclosing_class() is not info.node:
            return
        info.returns.append(self.evaluate(node.value) if node.value is not None else None)

    def visit_Call(self, node: cst.Call) -> None:
        self._record_call_site(node)
        qualname = self.ctx.qualname(node.func)
        kind = LOSS_FUNCTIONS.get(qualname, "") if qualname is not None else ""
        callee = None
        if not kind:
            callee = self.evaluate(node.func)
            if not isinstance(callee, (LossModule, SelfAttr, GlobalName, Param)):
                return  # cannot be (or name) a loss module
        first = argument(node, "input", 0)
        if first is None or first.star:
            return
        value = self.evaluate(first.value)
        if value is not None:
            self.loss_calls.append(LossCall(node, callee, "", value, kind))

    # -- resolution -------------------------------------------------------------------------
    def resolve(self, value: Optional[Value], seen: frozenset = frozenset()) -> Optional[Value]:
        if value is None or value in seen:
            return None
        seen = seen | {value}
        if isinstance(value, GlobalName):
            return self.resolve(self._global(value.name), seen)
        if isinstance(value, SelfAttr):
            return self.resolve(self._attribute(value.cls, value.attr), seen)
        if isinstance(value, Param):
            return self._argument(value, seen)
        if isinstance(value, Applied):
            callee = self.resolve(value.callee, seen)
            if isinstance(callee, ClassObj):
                return Instance(callee.ref)
            if isinstance(callee, ProbModule):
                return Prob(callee.origin)
            if isinstance(callee, Instance):
                if callee.ref.local:
                    return self.forward_output(callee.ref.name, seen)
                return External(callee.ref)
            return None
        return value

    def _global(self, name: str) -> Optional[Value]:
        values = self._module_assignments.get(name)
        if values is None:
            if name in self._module_classes and name in self._classes:
                return ClassObj(ClassRef(name=name))
            return None
        if name in self._module_classes or any(v is None or v != values[0] for v in values):
            return None
        return values[0]

    def _argument(self, param: Param, seen: frozenset) -> Optional[Value]:
        """What every call of the function in this file passes for `param`, when all agree."""
        function = param.function
        if self._module_functions.get(function) != 1 or self._module_assignments.get(function) != [None]:
            return None  # defined twice, or also assigned: which one is called is unclear
        sites = self._call_sites.get(function)
        if not sites:
            return None
        results = []
        for site in sites:
            if site.has_star:
                return None
            if param.name in site.keywords:
                value = site.keywords[param.name]
            elif param.index < len(site.positional):
                value = site.positional[param.index]
            else:
                return None  # the default is used
            result = self.resolve(value, seen)
            if result is None:
                return None
            results.append(result)
        first = results[0]
        if isinstance(first, (Prob, ProbModule)):
            return first if all(type(r) is type(first) for r in results) else None
        return first if all(r == first for r in results) else None

    def _class_chain(self, name: str) -> list[ClassInfo]:
        """The class and its same-file bases, nearest first."""
        chain, pending = [], [name]
        while pending:
            info = self._classes.get(pending.pop(0))
            if info is None or info in chain:
                continue
            chain.append(info)
            pending.extend(info.bases)
        return chain

    def _attribute(self, cls: str, attr: str) -> Optional[Value]:
        for info in self._class_chain(cls):
            values = info.attrs.get(attr)
            if values is not None:
                if any(v is None or v != values[0] for v in values):
                    return None
                return values[0]
        return None

    def forward_output(self, cls: str, seen: frozenset) -> Optional[Prob]:
        """Probabilities when every return of the class's forward returns probabilities."""
        for info in self._class_chain(cls):
            if info.returns is None:
                continue
            if not info.returns:
                return None
            results = [self.resolve(value, seen) for value in info.returns]
            if all(isinstance(result, Prob) for result in results):
                origin = results[-1].origin
                return Prob(Origin(origin.text, origin.node, via=f"{info.node.name.value}"))
            return None
        return None

    def probability_classes(self) -> list[tuple[str, Origin]]:
        """This file's module-level classes whose forward returns probabilities on every path."""
        if self._probability_classes is None:
            found = []
            for name in sorted(self._module_classes):
                if name in self._classes:
                    output = self.forward_output(name, frozenset())
                    if output is not None:
                        found.append((name, output.origin))
            self._probability_classes = found
        return self._probability_classes


class ProbabilityFlowRule(Rule):
    """Base of the rules that judge what a file's probability dataflow feeds to a call:
    subclasses say which loss kind they guard and how to word the finding."""

    #: The dataflow read (TL106 reads `SigmoidFlow`).
    analyses: ClassVar[tuple[type[Analysis], ...]] = (ProbabilityFlow,)
    #: The loss kind judged (a value of LOSS_FUNCTIONS / LOSS_MODULES).
    loss_kind: ClassVar[str] = ""
    loss_label_functional: ClassVar[str] = ""
    loss_label_module: ClassVar[str] = ""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        (flow,) = self.analyses
        self.flow: ProbabilityFlow = ctx.analysis(flow)

    @classmethod
    def message(cls, loss_label: str, where: str) -> str:
        raise NotImplementedError

    def judged_calls(self) -> list[LossCall]:
        """The calls this rule judges: functional losses of its kind, and every loss-module call
        (whose kind is known once its callee is resolved)."""
        return [call for call in self.flow.loss_calls if call.callee is not None or call.kind == self.loss_kind]

    def _inline_fix(self, loss: cst.Call) -> Optional[NodeFix]:
        """When the loss input is written as a softmax call right there, offer `fix_softmax`."""
        arg = next((a for a in loss.args if a.keyword is not None and a.keyword.value == "input"), None)
        if arg is None:
            arg = next((a for a in loss.args if a.keyword is None and not a.star), None)
        if arg is None or not isinstance(arg.value, cst.Call):
            return None
        softmax = arg.value
        if self.ctx.qualname(softmax.func) in SOFTMAX_FUNCTIONS:
            inner = next((a.value for a in softmax.args if a.keyword is None and not a.star), None)
            method = None
        elif isinstance(softmax.func, cst.Attribute) and softmax.func.attr.value == "softmax" and _looks_like_dim(softmax):
            inner, method = softmax.func.value, softmax
        else:
            return None
        if inner is None or "\n" in self.ctx.module.code_for_node(softmax):
            return None  # multi-line rewrites are left to the author
        return self.fix_softmax(softmax, inner, method is not None)

    def fix_softmax(self, softmax: cst.Call, inner: cst.BaseExpression, is_method: bool) -> Optional[NodeFix]:
        """The rule's rewrite of a softmax call that feeds the loss directly (None: no fix)."""
        return None

    def _line(self, node: cst.CSTNode) -> int:
        return self.ctx.position(node)[0]

    def _where(self, origin: Origin) -> str:
        line = self._line(origin.node)
        if origin.via:
            return f"`{origin.via}.forward` returns softmax output: {origin.text} at line {line}"
        return f"from {origin.text} at line {line}"

    def finish(self) -> None:
        for call in self.judged_calls():
            label = call.label
            if call.callee is not None:
                loss = self.flow.resolve(call.callee)
                if not (isinstance(loss, LossModule) and loss.kind == self.loss_kind):
                    continue
                label = label or self.loss_label_module
            value = self.flow.resolve(call.value)
            label = label or self.loss_label_functional
            if isinstance(value, Prob):
                self.report(call.node, self.message(label, self._where(value.origin)), fix=self._inline_fix(call.node))
            elif isinstance(value, External):
                self.add_fact(
                    "loss_input",
                    {
                        "qualname": value.ref.qualname,
                        "level": value.ref.level,
                        "target": value.ref.target,
                        "span": list(self.ctx.position(call.node)),
                        "label": label,
                    },
                )
        for name, origin in self.flow.probability_classes():
            self.add_fact("prob_class", {"name": name, "line": self._line(origin.node), "softmax": origin.text})

    # -- cross-file -------------------------------------------------------------------------
    @classmethod
    def project_check(cls, project: ProjectContext) -> list[Finding]:
        prob_classes = {
            path: {fact["name"]: fact for fact in facts.get(cls.code, {}).get("prob_class", [])}
            for path, facts in project.facts.items()
        }
        if not any(prob_classes.values()):
            return []
        findings = []
        for path, facts in project.facts.items():
            for fact in facts.get(cls.code, {}).get("loss_input", []):
                dotted = fact["qualname"] or fact["target"]
                module, _, class_name = dotted.rpartition(".")
                defining = _defining_file(project, path, module, fact["level"])
                class_fact = prob_classes.get(defining or "", {}).get(class_name)
                if class_fact is None:
                    continue
                where = (
                    f"`{class_name}.forward` returns softmax output: "
                    f"{class_fact['softmax']} at {defining}:{class_fact['line']}"
                )
                findings.append(make_finding(cls, path, fact["span"], cls.message(fact["label"], where)))
        return findings


def _defining_file(project: ProjectContext, importer: str, module: str, level: int) -> str | None:
    """The checked file that `module` means in `importer`. A top-level name (`from models
    import Net`) is only trusted next to the importing script: another folder's `models.py`
    may exist without being in this run's facts (it had no trigger token), so a unique match
    elsewhere proves nothing. A script inside a package folder finds its neighbour by file name."""
    if not module:
        return None
    found = project.resolve_module(importer, module, level)
    if level or "." in module:
        return found
    folder = _folder(importer)
    if found is not None and _folder(found) == folder:
        return found
    neighbours = [p for p in project.module_names if _folder(p) == folder and _stem(p) == module]
    return neighbours[0] if len(neighbours) == 1 else None


def _folder(path: str) -> str:
    return path.replace("\\", "/").rpartition("/")[0]


def _stem(path: str) -> str:
    return path.replace("\\", "/").rpartition("/")[2].rpartition(".")[0]
