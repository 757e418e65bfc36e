"""The semantic model of one file: scopes and bindings, classes and their modules, function
summaries, call sites; every expression's may-set of values.

It is an engine analysis (torchlint.analysis): the engine builds it for a file only when a
rule that reads it runs there, and visits it in the single traversal before the rules. While
visiting, a rule asks ``model.value(expr)`` for the *symbolic* value of an expression at
that point of the code; once the file has been read (in ``finish()``), it asks
``model.resolve(value)`` for the may-set of concrete values (see torchlint.semantic.values).

The one join policy:

* A name's value at a use is the last binding of it that surely runs before the use (its
  branch path is a prefix of the use's), joined with every later binding that may run
  before it: in an `if` arm, loop or `try` that the use comes after. A binding in the other
  arm of the same `if` is invisible. A binding later in a loop that holds the use reaches
  the use through the next iteration.
* Code under `if not self.training:` (or the `else` of `if self.training:`) is dead for the
  training computation this model describes: its bindings and returns are skipped.
* Parameters take the join of the arguments at every call site in the file; a module-level
  function nobody in the file calls leaves them to the project phase.
* `self.<attr>` is the join of every assignment to it in the class (and its bases in this
  file): `__init__`, setters, the class body.
"""

from __future__ import annotations

import builtins
import itertools
import re
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from torchlint.analysis import Analysis
from torchlint.semantic import torch_api as api
from torchlint.semantic.values import (
    EXP,
    GRAD,
    IDENTITY,
    LEAF,
    LOGPROB,
    MULTI_VIEW,
    ONE_HOT,
    PROB,
    ZEROS,
    Applied,
    Attr,
    Copied,
    Deferred,
    BoundMethod,
    ClassObj,
    ClassRef,
    External,
    FunctionObj,
    GlobalName,
    Instance,
    Item,
    Layer,
    Local,
    LossModule,
    NNModule,
    Origin,
    Param,
    Product,
    Quotient,
    Scattered,
    SelfAttr,
    SourceLabel,
    Sequence,
    Split,
    Tensor,
    View,
    COPYING_INDEX,
    SAVED,
    SAVED_KINDS,
    InPlace,
    MayCopy,
    Returned,
    Union_,
    Value,
)
from torchlint.static.names import dotted_name

_SCOPES = ("FunctionDef", "ClassDef", "Module")
_BUILTINS = frozenset(dir(builtins))
_BRANCHING = {"If": "if", "For": "loop", "While": "loop", "Try": "try", "TryStar": "try", "Match": "match"}
#: Expressions whose value is worth computing only when asked (a name costs less to read now
#: than to remember; a call needs its qualified name, its receiver, its arguments...).
#: (Names, not classes: touching libcst at import time would load it for a warm run.)
_DEFERRABLE = frozenset({"Call", "Subscript", "Attribute", "Tuple", "List", "IfExp", "BinaryOperation", "BooleanOperation"})
_END_OF_MODULE = 1 << 62
#: A `def` or `class` at the start of a line. A lone "\r" starts a line for Python too, but
#: not for `^`: such texts are searched with their "\r"s read as "\n"s. (On timm's sources
#: this scan took 0.12 s with a `(?:^|(?<=\r))` alternative, 0.05 s with `^` alone.)
_DEFINITION = re.compile(r"^[ \t\f]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.MULTILINE)
#: Beyond this depth resolution gives up (recursive helpers, long alias chains).
_MAX_DEPTH = 40


def defined_names(text: str) -> list[str]:
    """The names `def` and `class` statements define at the start of a line of `text`."""
    return _DEFINITION.findall(text.replace("\r", "\n") if "\r" in text else text)


@dataclass
class Binding:
    value: Value
    path: tuple  # ((statement id, child id, kind), ...) from the scope down to the binding
    order: int
    dead: bool = False  # made in code that does not run in training mode


@dataclass
class FunctionInfo:
    node: cst.FunctionDef
    owner: str  # class name for a method, "" at module level
    returns: list[Value] = field(default_factory=list)
    params: tuple[str, ...] = ()
    is_method: bool = False
    #: parameter -> the symbolic value of its default (evaluated where the def is)
    defaults: dict[str, Value] = field(default_factory=dict)
    #: for each of `returns`: the (parameter, value) pairs it is made under, from
    #: `if flag:` / `if not flag:` around it, or an `if flag: return ...` before it
    return_conditions: list[tuple] = field(default_factory=list)
    #: parameter -> its default when that is the literal True or False
    flag_defaults: dict[str, bool] = field(default_factory=dict)


@dataclass
class ClassInfo:
    node: cst.ClassDef
    bases: tuple[str, ...]
    #: attribute -> values assigned to `self.<attr>` in any method, or in the class body.
    attrs: dict[str, list[Value]] = field(default_factory=dict)
    methods: dict[str, FunctionInfo] = field(default_factory=dict)


@dataclass
class CallSite:
    callee: Value
    positional: list[Value]
    keywords: dict[str, Value]
    has_star: bool


class SemanticModel(Analysis):
    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._order = itertools.count()
        #: expressions whose value waits until someone resolves it: (expression, ancestors
        #: then, order then), and the values already computed
        self._deferred: list[tuple[cst.BaseExpression, tuple, int]] = []
        self._forced: dict[int, Value] = {}
        self._fixed_order: int | None = None
        self._bindings: dict[tuple[int, str], list[Binding]] = {}
        self._scope_kinds: dict[int, cst.CSTNode] = {}
        self._scope_parent: dict[int, int] = {}
        self.classes: dict[str, ClassInfo] = {}
        self._ambiguous_classes: set[str] = set()
        self.functions: dict[tuple[str, str], FunctionInfo] = {}
        self._ambiguous_functions: set[tuple[str, str]] = set()
        #: call sites by the name called (`f(...)`, `x.f(...)`, `Net(...)`): parameter values.
        self._calls_by_name: dict[str, list[CallSite]] = {}
        #: (method name, receiver, call site) of `obj.method(...)` on a local name: what a
        #: method of another file's class receives from here (`trainer.train(model)`)
        self._method_calls: list[tuple[str, Value, CallSite]] = []
        #: `from <module> import *` of this file: (level, module).
        self.star_imports: list[tuple[int, str]] = []
        self._torch_star: list[str] = []
        self._resolving: dict[Value, frozenset] = {}
        #: Blocks whose remaining statements do not run in training mode (an earlier
        #: `if self.training: return ...` left the function).
        self._dead_after: set[int] = set()
        self._functions_by_node: dict[int, FunctionInfo] | None = None
        self._imported = frozenset(ctx.aliases.aliases)
        #: Work several readers of the model share (a rule family's per-call results).
        self.memo: dict[str, Any] = {}
        self._scope_key: tuple = ()
        self._defined: frozenset[str] | None = None
        self._two_argument_calls: list[tuple[cst.Call, Value, Value]] = []
        #: ids of those calls made under `no_grad()`/`inference_mode()`: nothing trains there
        self._calls_without_grad: set[int] = set()
        self._scope_cached = 0
        self._path_key: tuple = ()
        self._path_cached: tuple = ()
        #: `if` statements seen on binding paths, by id (to tell when every arm rebinds a name).
        self._branch_nodes: dict[int, cst.If] = {}
        self._in_progress: set[Value] = set()
        #: class -> `self.<attr>` names whose `requires_grad` some method turns off.
        self._frozen: dict[str, set[str]] = {}
        #: (scope id, dotted path) frozen the same way outside `self`.
        self._frozen_paths: set[tuple[int, str]] = set()
        #: Functions defined inside a followed function (`def run(i, h): return self.blocks[i](h)`
        #: in a forward), keyed by (`<Class.forward>` of the function holding them, name): followed
        #: like the file's own functions, but kept apart from them, so never a file fact.
        self._nested: dict[tuple[str, str], FunctionInfo] = {}
        self._ambiguous_nested: set[tuple[str, str]] = set()
        #: Every followed function by node id, and a nested function's enclosing one (by node id).
        self._followed: dict[int, FunctionInfo] = {}
        self._enclosing_of: dict[int, int] = {}

    # -- where we are -----------------------------------------------------------------------
    def _scope_index(self) -> int:
        ancestors = self.ctx.ancestors
        key = (len(ancestors), id(ancestors[-1]) if ancestors else 0)
        if key == self._scope_key:
            return self._scope_cached
        found = 0
        for index in range(len(ancestors) - 1, -1, -1):
            if type(ancestors[index]).__name__ in _SCOPES:
                found = index
                break
        self._scope_key, self._scope_cached = key, found
        return found

    def _path(self, scope_index: int) -> tuple:
        """The branching statements between the scope and here, each with the child (arm)
        we are in: ((statement id, child id, kind), ...). Memoised for the node being visited:
        every name in one expression asks."""
        ancestors = self.ctx.ancestors
        key = (len(ancestors), id(ancestors[-1]) if ancestors else 0, scope_index)
        if key == self._path_key:
            return self._path_cached
        path = self._compute_path(scope_index)
        self._path_key, self._path_cached = key, path
        return path

    def _compute_path(self, scope_index: int) -> tuple:
        ancestors = self.ctx.ancestors
        path = []
        for index in range(scope_index + 1, len(ancestors) - 1):
            kind = _BRANCHING.get(type(ancestors[index]).__name__)
            if kind is not None:
                path.append((id(ancestors[index]), id(ancestors[index + 1]), kind))
                if kind in ("if", "match"):
                    self._branch_nodes[id(ancestors[index])] = ancestors[index]
        return tuple(path)

    def _dead_in_training(self, scope_index: int) -> bool:
        """Inside `if not self.training:`, the `else` of `if self.training:`, or after an
        `if self.training: return ...` in the same block."""
        ancestors = self.ctx.ancestors
        if self._dead_after and any(id(node) in self._dead_after for node in ancestors[scope_index + 1 :]):
            return True
        for index in range(scope_index + 1, len(ancestors) - 1):
            node = ancestors[index]
            if type(node) is cst.If:
                polarity = _training_test(node.test)
                if polarity is None:
                    continue
                in_body = ancestors[index + 1] is node.body
                if polarity != in_body:
                    return True
        return False

    def in_training_path(self) -> bool:
        """Whether the code being visited runs in training mode (see the join policy)."""
        return not self._dead_in_training(self._scope_index())

    def _method(self) -> tuple[str, str] | None:
        """(class name, name of `self`) inside an ordinary method of a class of this file."""
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

    # -- names of torch -----------------------------------------------------------------------
    def qualname(self, expr: cst.BaseExpression) -> str | None:
        """The torch (or other import) qualified name of `expr`, star imports of torch included."""
        if not self._torch_star:
            # Most names the model evaluates are locals: when the root of a dotted name is no
            # import at all, the alias table has nothing to say (and asking costs).
            root = expr
            while type(root) is cst.Attribute:
                root = root.value
            if type(root) is not cst.Name or root.value not in self._imported:
                return None
        found = self.ctx.qualname(expr)
        if found is not None or not self._torch_star:
            return found
        dotted = dotted_name(expr)
        if dotted is None:
            return None
        head = dotted.partition(".")[0]
        if self._bound_here(head):
            return None
        for module in self._torch_star:
            return f"{module}.{dotted}"
        return None

    def _bound_here(self, name: str) -> bool:
        scope_index = self._scope_index()
        for index in range(scope_index + 1):
            node = self.ctx.ancestors[index]
            if (id(node), name) in self._bindings:
                return True
            if type(node) is cst.FunctionDef and name in self.ctx.bindings_of(node):
                return True
        return name in self.classes or ("", name) in self.functions

    # -- binding ----------------------------------------------------------------------------
    def _bind(self, name: str, value: Value) -> None:
        scope_index = self._scope_index()
        scope = self.ctx.ancestors[scope_index]
        binding = Binding(value, self._path(scope_index), next(self._order), self._dead_in_training(scope_index))
        self._bindings.setdefault((id(scope), name), []).append(binding)
        if type(scope) is cst.ClassDef:
            info = self.classes.get(scope.name.value)
            if info is not None and info.node is scope:
                info.attrs.setdefault(name, []).append(value)

    def bind_target(self, target: cst.BaseExpression, value: Value) -> None:
        if type(target) is cst.Name:
            self._bind(target.value, value)
        elif type(target) is cst.Attribute and type(target.value) is cst.Name:
            method = self._method()
            if method is not None and target.value.value == method[1]:
                info = self.classes.get(method[0])
                if info is not None:
                    info.attrs.setdefault(target.attr.value, []).append(value)
        elif type(target) in (cst.Tuple, cst.List):
            starred = False
            for index, element in enumerate(target.elements):
                if type(element) is cst.StarredElement:
                    starred = True
                    self.bind_target(element.value, None)
                else:
                    # After a starred target, positions count from the end: not followed.
                    self.bind_target(element.value, None if starred else Item(value, index))
        elif type(target) is cst.StarredElement:
            self.bind_target(target.value, None)

    def leave_Assign(self, node: cst.Assign) -> None:
        value = self.later(node.value)
        for target in node.targets:
            self.bind_target(target.target, value)
            self._requires_grad_assignment(target.target, node.value)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.bind_target(node.target, self.later(node.value))

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        self.bind_target(node.target, None)

    def leave_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.bind_target(node.target, self.value(node.value))

    def visit_For(self, node: cst.For) -> None:
        self.bind_target(node.target, Item(self.value(node.iter), None))

    def leave_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self.bind_target(node.asname.name, None)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if type(node.names) is not cst.ImportStar:
            return
        module = dotted_name(node.module) if node.module is not None else ""
        level = len(node.relative)
        if level == 0 and module and (module == "torch" or module.startswith("torch.")):
            self._torch_star.append(module)
        elif module or level:
            self.star_imports.append((level, module or ""))

    def leave_If(self, node: cst.If) -> None:
        if node.orelse is None and _training_test(node.test) is True and _always_leaves(node.body):
            block = self.ctx.ancestors[-1] if self.ctx.ancestors else None
            if type(block) is cst.IndentedBlock:
                self._dead_after.add(id(block))

    # -- classes and functions ------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        name = node.name.value
        bases = tuple(dotted_name(arg.value) or "" for arg in node.bases if arg.keyword is None)
        if name in self.classes or name in self._ambiguous_classes:
            self.classes.pop(name, None)
            self._ambiguous_classes.add(name)
        elif type(self.ctx.ancestors[self._scope_index()]) is cst.Module:
            self.classes[name] = ClassInfo(node, bases)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        scope = self.ctx.ancestors[self._scope_index()]
        owner = ""
        if type(scope) is cst.ClassDef:
            info = self.classes.get(scope.name.value)
            if info is None or info.node is not scope:
                return
            owner = scope.name.value
        elif type(scope) is cst.FunctionDef:
            self._visit_nested_function(node, scope)
            return
        elif type(scope) is not cst.Module:
            return
        key = (owner, node.name.value)
        is_method = bool(owner) and not any(
            dotted_name(d.decorator) in ("staticmethod", "classmethod") for d in node.decorators
        )
        if key in self.functions or key in self._ambiguous_functions:
            self.functions.pop(key, None)
            self._ambiguous_functions.add(key)
            if owner:
                self.classes[owner].methods.pop(node.name.value, None)
            return
        info = self._function_info(node, owner, is_method)
        self.functions[key] = info
        self._followed[id(node)] = info
        if owner:
            self.classes[owner].methods[node.name.value] = info

    def _function_info(self, node: cst.FunctionDef, owner: str, is_method: bool) -> FunctionInfo:
        params = tuple(p.name.value for p in (*node.params.posonly_params, *node.params.params))
        defaults = {p.name.value: self.value(p.default) for p in (*node.params.posonly_params, *node.params.params) if p.default is not None}
        info = FunctionInfo(node, owner, [], params, is_method, defaults)
        info.flag_defaults = {
            p.name.value: _literal(p.default)
            for p in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params)
            if p.default is not None and _literal(p.default) is not None
        }
        return info

    def _visit_nested_function(self, node: cst.FunctionDef, enclosing_node: cst.FunctionDef) -> None:
        """A function defined in a followed function: its returns and parameters are followed
        (through the calls in the enclosing function), and the names it does not bind are the
        enclosing function's (`self` of a forward)."""
        enclosing = self._followed.get(id(enclosing_node))
        if enclosing is None:
            return
        key = (f"<{enclosing.owner}.{enclosing_node.name.value}>" if enclosing.owner else f"<{enclosing_node.name.value}>", node.name.value)
        if key in self._nested or key in self._ambiguous_nested:
            dropped = self._nested.pop(key, None)
            if dropped is not None:
                self._followed.pop(id(dropped.node), None)
            self._ambiguous_nested.add(key)
            return
        info = self._function_info(node, key[0], False)
        self._nested[key] = info
        self._followed[id(node)] = info
        self._enclosing_of[id(node)] = id(enclosing_node)

    def _function(self, owner: str, name: str) -> FunctionInfo | None:
        """A function of this file, or one nested in one, by (owner, name)."""
        return self.functions.get((owner, name)) or self._nested.get((owner, name))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        scope = self.ctx.ancestors[self._scope_index()]
        if type(scope) is cst.Module:
            self._bind(node.name.value, FunctionObj("", node.name.value))
        elif type(scope) is not cst.ClassDef:
            info = self._followed.get(id(node))
            # a nested function: followed when the function holding it is
            self._bind(node.name.value, FunctionObj(info.owner, node.name.value) if info is not None else None)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        if type(self.ctx.ancestors[self._scope_index()]) is not cst.Module:
            self._bind(node.name.value, None)

    def _current_function(self) -> FunctionInfo | None:
        function = self.ctx.enclosing_function()
        if function is None:
            return None
        cls = self.ctx.enclosing_class()
        info = self.functions.get((cls.name.value if cls is not None else "", function.name.value))
        if info is not None and info.node is function:
            return info
        nested = self._followed.get(id(function))
        return nested if nested is not None and self._nested.get((nested.owner, function.name.value)) is nested else None

    def visit_Return(self, node: cst.Return) -> None:
        scope_index = self._scope_index()
        if type(self.ctx.ancestors[scope_index]) is not cst.FunctionDef:
            return
        info = self._current_function()
        if info is None or self._dead_in_training(scope_index):
            return
        info.returns.append(self.later(node.value) if node.value is not None else None)
        info.return_conditions.append(_flag_conditions(self.ctx.ancestors, scope_index, info))

    def visit_Call(self, node: cst.Call) -> None:
        name = _called_name(node.func)
        if name is None:
            return
        # (the model's own qualname: most calls are methods of locals, no import to look up)
        qualname = self.qualname(node.func)
        if qualname is not None and qualname.split(".")[0] == "torch":
            return
        # Call sites matter for what a parameter receives: calls of this file's functions,
        # methods and classes, and of imported names (facts for other files). Most calls in
        # model code are tensor methods (`x.view(...)`) and need no record.
        if qualname is None and name not in self._defined_names():
            if self._calls_own_submodule(node.func):
                name = "forward"  # `self.block(x)`: what `Block.forward`'s parameters receive
            else:
                self._note_method_call(node, name)
                return
        has_star = any(arg.star for arg in node.args)
        site = CallSite(self.value(node.func), [], {}, has_star)
        if not has_star:
            for arg in node.args:
                if arg.keyword is None:
                    site.positional.append(self.later(arg.value))
                else:
                    site.keywords[arg.keyword.value] = self.later(arg.value)
        self._calls_by_name.setdefault(name, []).append(site)

    def _calls_own_submodule(self, func: cst.BaseExpression) -> bool:
        """`self.<attr>(...)` inside a method of a class of this file (`self.block(x)`), where
        some class of this file defines `forward`: the call may reach its parameters."""
        if type(func) is not cst.Attribute or type(func.value) is not cst.Name:
            return False
        method = self._method()
        if method is None or func.value.value != method[1]:
            return False
        # once per file, not once per call: model code makes thousands of `self.<attr>(...)` calls
        defines = self.memo.get("defines forward")
        if defines is None:
            defines = self.memo["defines forward"] = "def forward" in self.ctx.text
        return defines

    def _note_method_call(self, node: cst.Call, name: str) -> None:
        """`trainer.train(model)`, `model.add_loss_op(nn.NLLLoss())` on a local name: kept for
        the file's summary when the receiver turns out to be an instance of an imported class.
        Tensor methods (`x.view(...)`), the bulk of calls in model code, are not kept."""
        func = node.func
        if type(func) is not cst.Attribute or type(func.value) is not cst.Name or not node.args:
            return
        if name in api.TENSOR_METHODS or name in api.COPY_METHODS or func.value.value == "self":
            return
        if name in api.PASSTHROUGH_METHODS and name != "train":
            return  # `.to(device)`, `.eval()`: a module's own; `trainer.train(model)` is a trainer's
        if any(arg.star for arg in node.args):
            return
        site = CallSite(None, [], {}, False)
        for arg in node.args:
            if arg.keyword is None:
                site.positional.append(self.later(arg.value))
            else:
                site.keywords[arg.keyword.value] = self.later(arg.value)
        self._method_calls.append((name, self.value(func.value), site))

    def method_calls(self) -> list[tuple[str, Value, CallSite]]:
        return self._method_calls

    def _defined_names(self) -> frozenset[str]:
        """Names this file defines with `def` or `class` (a text scan: they may come later)."""
        if self._defined is None:
            self._defined = frozenset(defined_names(self.ctx.text))
        return self._defined

    def two_argument_calls(self) -> list[tuple[cst.Call, Value, Value]]:
        """Calls with an input and a target, as losses take them: (call, callee, input) with
        the callee's symbolic value (None for a torch function) and the input's. Collected
        once per file for every rule that judges loss inputs."""
        return self._two_argument_calls

    def called_without_grad(self, call: cst.Call) -> bool:
        """One of `two_argument_calls` made under `no_grad()`/`inference_mode()` (or in a
        function decorated so): a loss computed there is only reported, never trained on."""
        return id(call) in self._calls_without_grad

    def leave_Call(self, node: cst.Call) -> None:
        args = node.args
        if args and (args[0].star or (args[0].keyword is not None and args[0].keyword.value != "input")):
            return
        if sum(1 for arg in args if not arg.star) < 2:
            return  # `norm_layer(dim, **kwargs)`: a layer being built, not a loss being computed
        function = self.ctx.enclosing_function()
        if function is not None and function.name.value == "__init__":
            return  # modules are built in __init__; losses are computed elsewhere
        qualname = self.qualname(node.func)
        if qualname is not None:
            if qualname not in api.LOSS_FUNCTIONS:
                return
            callee = None
        else:
            callee = self.value(node.func)
            if callee is None:
                return
        self._two_argument_calls.append((node, callee, self.value(args[0].value)))
        if self._grad_disabled():
            self._calls_without_grad.add(id(node))

    # -- symbolic evaluation (while visiting) -------------------------------------------------
    def later(self, expr: cst.BaseExpression) -> Value:
        """`value(expr)` as of now, computed only if something resolves it. Names and
        literals cost nothing to read now; calls, subscripts and the like are deferred."""
        if type(expr).__name__ not in _DEFERRABLE:
            return self.value(expr)
        self._deferred.append((expr, tuple(self.ctx.ancestors), next(self._order)))
        return Deferred(len(self._deferred) - 1)

    def _force(self, deferred: Deferred) -> Value:
        key = deferred.key
        if key in self._forced:
            return self._forced[key]
        expr, ancestors, order = self._deferred[key]
        saved = self.ctx.ancestors
        caches = (self._scope_key, self._scope_cached, self._path_key, self._path_cached)
        self.ctx.ancestors, self._fixed_order = list(ancestors), order
        try:
            result = self.value(expr)
        finally:
            self.ctx.ancestors, self._fixed_order = saved, None
            self._scope_key, self._scope_cached, self._path_key, self._path_cached = caches
        self._forced[key] = result
        return result

    def value(self, expr: cst.BaseExpression | None) -> Value:
        """The symbolic value of `expr` at this point of the traversal (None: unknown)."""
        if expr is None:
            return None
        kind = type(expr)
        if kind is cst.Name or kind is cst.Attribute:
            qualname = self.qualname(expr)
            if qualname is not None:
                # torch's own names are not values the model follows; another module's are
                # decided by the file that defines them (project phase).
                return None if qualname.split(".")[0] == "torch" else External(("global", ClassRef(qualname=qualname)))
        if kind is cst.Name:
            return self._name(expr.value)
        if kind is cst.Attribute:
            method = self._method()
            if method is not None and type(expr.value) is cst.Name and expr.value.value == method[1]:
                return SelfAttr(method[0], expr.attr.value)
            return Attr(self.value(expr.value), expr.attr.value)
        if kind is cst.Call:
            return self._call(expr)
        if kind is cst.Subscript:
            return self._subscript(expr)
        if kind in (cst.Tuple, cst.List):
            if any(type(e) is cst.StarredElement for e in expr.elements):
                return None
            return Sequence("tuple" if kind is cst.Tuple else "list", tuple(self.value(e.value) for e in expr.elements))
        if kind is cst.IfExp:
            return Union_((self.value(expr.body), self.value(expr.orelse)))
        if kind is cst.NamedExpr:
            return self.value(expr.value)
        if kind is cst.BinaryOperation and type(expr.operator) is cst.Divide:
            return self._quotient(expr)
        if kind is cst.BinaryOperation and type(expr.operator) is cst.MatrixMultiply:
            return Product(self.value(expr.left), self.value(expr.right))
        if kind is cst.BooleanOperation and type(expr.operator) is cst.Or:
            return Union_((self.value(expr.left), self.value(expr.right)))
        return None

    def _name(self, name: str) -> Value:
        scope_index = self._scope_index()
        scope = self.ctx.ancestors[scope_index]
        order = self._fixed_order if self._fixed_order is not None else next(self._order)
        return Local(id(scope), name, self._path(scope_index), order)

    def _subscript(self, expr: cst.Subscript) -> Value:
        index: Any = None
        if len(expr.slice) == 1 and type(expr.slice[0].slice) is cst.Index:
            inner = expr.slice[0].slice.value
            if type(inner) is cst.Integer:
                index = int(inner.value, 0)
            elif type(inner) is cst.SimpleString:
                index = inner.evaluated_value if isinstance(inner.evaluated_value, str) else None
        if index is None and not is_basic_index(expr):
            index = COPYING_INDEX
        return Item(self.value(expr.value), index)

    def _quotient(self, expr: cst.BinaryOperation) -> Value:
        right = expr.right
        if type(right) is not cst.Call:
            return None
        summed = None
        if type(right.func) is cst.Attribute and right.func.attr.value == "sum" and self.qualname(right.func) is None:
            summed = right.func.value
        elif self.qualname(right.func) in api.SUM_FUNCTIONS and right.args:
            summed = right.args[0].value
        if summed is None:
            return None
        return Quotient(self.value(expr.left), self.value(summed), self.origin(expr, text="hand-written softmax `e / e.sum(...)`"))

    def origin(self, node: cst.CSTNode, func: cst.BaseExpression | None = None, text: str | None = None) -> Origin:
        if text is None:
            return Origin(SourceLabel(self.ctx.module, func if func is not None else node), node)
        return Origin(text, node)

    def _call(self, call: cst.Call) -> Value:
        func = call.func
        qualname = self.qualname(func)
        autograd = self._autograd_call(call, func, qualname)
        if autograd is not None:
            return autograd
        if qualname is not None and (qualname.split(".")[0] == "torch" or type(func) is not cst.Attribute):
            return self._qualified_call(call, qualname)
        # `classifier.to(device)` on an imported object: its methods, not a module's function.
        if type(func) is cst.Attribute and qualname is not None:
            method = func.attr.value
            if method in api.PASSTHROUGH_METHODS or method in api.COPY_METHODS:
                return self.value(func.value)
            if method in ("forward", "__call__"):
                return Applied(self.value(func.value))
            return self._qualified_call(call, qualname)
        if type(func) is cst.Attribute:
            method = func.attr.value
            receiver = self.value(func.value)
            if method in api.TENSOR_METHODS and self._tensor_method(call, func):
                return self._tensor(api.TENSOR_METHODS[method], self.origin(call, func))
            if method in api.COPY_METHODS:
                return Copied(receiver)
            if method in api.PASSTHROUGH_METHODS:
                return receiver
            if method in api.MATRIX_PRODUCT_METHODS and len(call.args) == 1 and call.args[0].keyword is None:
                return Product(receiver, self.value(call.args[0].value))
            if method in ("scatter", "scatter_") and _scatters_ones(call):
                return Scattered(receiver, self.origin(call, func))
            if method == "forward":
                return Applied(receiver, _call_flags(call))
            if method in ("__call__",):
                return Applied(receiver, _call_flags(call))
        imported = self._imported_class(func)
        if imported is not None:
            return Instance(imported)
        return Applied(self.value(func), _call_flags(call))

    def _tensor(self, kind: str, origin: Origin) -> Tensor:
        return Tensor(kind, origin, recorded=not self._grad_disabled() and not self._untracked_input(origin.node))

    def _grad_disabled(self) -> bool:
        """Under `with torch.no_grad():` / `inference_mode()`, or in a function decorated so."""
        for node in self.ctx.ancestors:
            kind = type(node)
            if kind is cst.With and any(_disables_grad(item.item) for item in node.items):
                return True
            if kind is cst.FunctionDef and any(_disables_grad(d.decorator) for d in node.decorators):
                return True
        return False

    def is_tensor_method(self, call: cst.Call, method: str) -> bool:
        """`call` is `<tensor>.<method>(...)` (as opposed to a module's or library's method)."""
        func = call.func
        return type(func) is cst.Attribute and func.attr.value == method and self.qualname(func) is None and self._tensor_method(call, func)

    def _tensor_method(self, call: cst.Call, func: cst.Attribute) -> bool:
        """`x.softmax(1)` is Tensor.softmax unless `x` is `self` (the module's own method), a
        module of another library, or the call does not take a dimension."""
        receiver = func.value
        if type(receiver) is cst.Name:
            method = self._method()
            if method is not None and receiver.value == method[1]:
                return False
            if receiver.value in self.ctx.aliases.relative_imports:
                return False
        head = dotted_name(receiver)
        if head is not None and self.ctx.aliases.resolve(head) is not None:
            return False
        if func.attr.value in ("softmax", "log_softmax"):
            return _looks_like_dim(call)
        return not call.args

    def _qualified_call(self, call: cst.Call, qualname: str) -> Value:
        if qualname in api.TENSOR_FUNCTIONS:
            return self._tensor(api.TENSOR_FUNCTIONS[qualname], self.origin(call, call.func))
        if qualname in api.LAYERS:
            return Layer(api.LAYERS[qualname], self.origin(call, call.func), _built_inplace(call, qualname))
        if qualname in api.LOSS_MODULES:
            return LossModule(api.LOSS_MODULES[qualname])
        if qualname in api.PASSTHROUGH_FUNCTIONS:
            first = _argument(call, "input", 0)
            return self.value(first.value) if first is not None else None
        if qualname in api.MATRIX_PRODUCT_FUNCTIONS:
            first, second = _argument(call, "input", 0), _argument(call, "mat2", 1) or _argument(call, "other", 1)
            return Product(self.value(first.value), self.value(second.value)) if first is not None and second is not None else None
        if qualname in api.SEQUENTIAL:
            return Sequence("sequential", tuple(self._sequential_layers(call)))
        if qualname in api.MODULE_LIST:
            first = _argument(call, "modules", 0)
            return Sequence("modulelist", (self._listed(first.value),)) if first is not None else None
        if qualname in api.MODULE_DICT:
            first = _argument(call, "modules", 0)
            if first is not None and type(first.value) is cst.Dict:
                return Sequence("moduledict", tuple(self.value(e.value) for e in first.value.elements if type(e) is cst.DictElement))
            return None
        if qualname in api.IDENTITY_LAYERS:
            return Layer(IDENTITY, self.origin(call, call.func), _built_inplace(call, qualname))
        if qualname in api.MODULE_WRAPPERS:
            first = _argument(call, "module", 0) or _argument(call, "model", 0)
            return self.value(first.value) if first is not None else None
        imported = self._imported_class(call.func)
        if imported is not None:
            return Instance(imported)
        if qualname.split(".")[0] != "torch":
            return Applied(External(("global", ClassRef(qualname=qualname))))
        return self._torch_module(call, qualname)

    def _imported_class(self, func: cst.BaseExpression) -> ClassRef | None:
        qualname = self.qualname(func)
        if qualname is not None:
            if qualname.split(".")[0] == "torch" or not qualname.rpartition(".")[2][:1].isupper():
                return None
            return ClassRef(qualname=qualname)
        if type(func) is cst.Name and func.value in self.ctx.aliases.relative_imports:
            function = self.ctx.enclosing_function()
            if function is not None and func.value in self.ctx.bindings_of(function):
                return None
            level, target = self.ctx.aliases.relative_imports[func.value]
            return ClassRef(level=level, target=target)
        return None

    # -- after the traversal ----------------------------------------------------------------------
    def finish(self) -> None:
        from torchlint.semantic.project import FACTS_KEY, export

        summary = export(self, self.ctx.path)
        if summary:
            self.ctx.facts[FACTS_KEY] = summary

    def module_names(self) -> list[str]:
        """Names bound by assignments at module level."""
        module = id(self.ctx.module)
        return [name for (scope, name) in self._bindings if scope == module and name not in self.classes and ("", name) not in self.functions]

    def resolve_global(self, name: str) -> frozenset:
        return frozenset(self._resolve_global(name, 0))

    def calls_by_name(self) -> dict[str, list[CallSite]]:
        return self._calls_by_name

    def function_info(self, node: cst.FunctionDef) -> FunctionInfo | None:
        """The summary of a module-level function or method of this file (None when nested)."""
        return self._function_of(node)

    def method(self, cls: str, name: str) -> FunctionInfo | None:
        """Method `name` of class `cls` or of its nearest base defined in this file."""
        for info in self._class_chain(cls):
            if name in info.methods:
                return info.methods[name]
        return None

    def functions_called(self, callee: Value) -> list[FunctionInfo]:
        """The functions and methods of this file that calling `callee` (a symbolic value,
        taken with `value()` where the call is) may run: the call graph's edges."""
        found: list[FunctionInfo] = []
        for target in self.resolve(callee):
            kind = type(target)
            info = None
            if kind is FunctionObj:
                info = self.functions.get((target.owner, target.name))
            elif kind is BoundMethod:
                info = self.method(target.cls, target.name)
            if info is not None and all(info is not known for known in found):
                found.append(info)
        return found

    def is_module(self, value: Value) -> bool:
        """Whether a concrete value is an nn.Module: a layer, a container, or an instance of a
        class of this file that derives from one of torch.nn's (or Lightning's) modules."""
        kind = type(value)
        if kind is Layer or kind is NNModule:
            return True
        if kind is Sequence:
            return value.kind in ("sequential", "modulelist", "moduledict")
        if kind is Instance and value.ref.local:
            for info in self._class_chain(value.ref.name):
                for base in info.bases:
                    qualname = self.ctx.aliases.resolve(base) or ""
                    if qualname.startswith("torch.nn.") or qualname.endswith("LightningModule"):
                        return True
        return False

    def torch_star_name(self, name: str) -> str | None:
        """`torch.<name>` when `from torch import *` brought `name` and this file binds no
        name of its own like it at module level."""
        if not self._torch_star or name in self.classes or ("", name) in self.functions:
            return None
        if (id(self.ctx.module), name) in self._bindings or name in self.ctx.aliases.aliases:
            return None
        return f"{self._torch_star[0]}.{name}"

    # -- resolution ---------------------------------------------------------------------------------
    def resolve(self, value: Value, depth: int = 0) -> frozenset:
        """The may-set of concrete values of a symbolic value."""
        if value is None or depth > _MAX_DEPTH:
            return frozenset()
        cached = self._resolving.get(value)
        if cached is not None:
            return cached
        if value in self._in_progress:
            return frozenset()  # a cycle (recursion, `x = f(x)` in a loop): nothing more from here
        self._in_progress.add(value)
        try:
            result = frozenset(self._resolve(value, depth + 1))
        finally:
            self._in_progress.discard(value)
        self._resolving[value] = result
        return result

    def _resolve(self, value: Value, depth: int) -> set:
        kind = type(value)
        if kind is Local:
            return self._resolve_local(value, depth)
        if kind is GlobalName:
            return self._resolve_global(value.name, depth)
        if kind is SelfAttr:
            return self._resolve_attr(value.cls, value.attr, depth)
        if kind is Param:
            return self._resolve_param(value, depth)
        if kind is Applied:
            found: set = set()
            for callee in self.resolve(value.callee, depth):
                found |= self.apply(callee, depth, value.flags)
            return _returned(found) if found else found
        if kind is Item:
            return self._resolve_item(value, depth)
        if kind is Attr:
            found = set()
            for owner in self.resolve(value.value, depth):
                if type(owner) is Instance and owner.ref.local:
                    found |= self._resolve_attr(owner.ref.name, value.name, depth)
                elif type(owner) is External:
                    duck = self._attr_of_every_class(value.name, depth) if owner.ref[0] == "param" else set()
                    found |= duck or {External(("attr", owner.ref, value.name))}
                elif type(owner) is NNModule:
                    found |= self._layer_parameter(owner, value.name)
                elif type(owner) is Tensor and value.name in api.VIEW_ATTRIBUTES and owner.kind in (LEAF, MULTI_VIEW):
                    found.add(owner)
            return found
        if kind is Split:
            return self._resolve_split(value, depth)
        if kind is View:
            return self._resolve_view(value, depth)
        if kind is InPlace:
            return self._resolve_inplace(value, depth)
        if kind is Returned:
            return _returned(set(self.resolve(value.value, depth)))
        if kind is MayCopy:
            return {Tensor(v.kind, v.origin, False, v.from_layer) if type(v) is Tensor and v.kind == MULTI_VIEW else v for v in self.resolve(value.value, depth)}
        if kind is Copied:
            return {Tensor(v.kind, v.origin, False, v.from_layer) if type(v) is Tensor else v for v in self.resolve(value.value, depth)}
        if kind is Deferred:
            return self.resolve(self._force(value), depth)
        if kind is Union_:
            found = set()
            for option in value.options:
                found |= self.resolve(option, depth)
            return found
        if kind is Product:
            return self._resolve_product(value, depth)
        if kind is Scattered:
            into = self.resolve(value.value, depth)
            return {Tensor(ONE_HOT, value.origin, False)} if into and all(type(v) is Tensor and v.kind == ZEROS for v in into) else set()
        if kind is Quotient:
            numerators = {v.origin for v in self.resolve(value.numerator, depth) if type(v) is Tensor and v.kind == EXP}
            summed = {v.origin for v in self.resolve(value.summed, depth) if type(v) is Tensor and v.kind == EXP}
            return {Tensor(PROB, value.origin)} if numerators & summed else set()
        return {value}

    def _resolve_product(self, product: Product, depth: int) -> set:
        """Probabilities times a one-hot selector (either side): each output row (or column)
        is one of theirs, so still probabilities. Not saved by the softmax that made them (a
        new tensor): marked not `recorded`. Times anything else: nothing known."""
        left, right = self.resolve(product.left, depth), self.resolve(product.right, depth)
        found: set = set()
        for kept, selector in ((left, right), (right, left)):
            if selector and all(type(v) is Tensor and v.kind == ONE_HOT for v in selector):
                found |= {Tensor(v.kind, v.origin, False, v.from_layer) for v in kept if type(v) is Tensor and v.kind in (PROB, LOGPROB)}
        return found

    def _resolve_local(self, use: Local, depth: int) -> set:
        bindings = self._bindings.get((use.scope, use.name), [])
        found: set = set()
        definite = False
        maybe: list[tuple] = []
        carried: list[tuple[int, Binding]] = []  # (depth of the loop carrying it, binding)
        for binding in reversed(bindings):
            if binding.order > use.order:
                if _loop_carried(binding.path, use.path) and not binding.dead:
                    carried.append((_carrying_loop(binding.path, use.path), binding))
                continue
            if binding.dead:
                continue
            reach = _reach(binding.path, use.path)
            if reach == "never":
                continue
            found |= self.resolve(binding.value, depth)
            if reach == "surely" or self._every_arm_binds(maybe := [*maybe, binding.path], use.path):
                definite = True
                # Rebound in the loop body before the use (directly, or in every arm of an `if`
                # there): the previous iteration's value is gone.
                common = _common_prefix(binding.path, use.path)
                carried = [(loop, b) for loop, b in carried if common <= loop]
                break
        for _, binding in carried:
            found |= self.resolve(binding.value, depth)
        if definite:
            return found
        return found | self._entry_value(use, depth)

    def _every_arm_binds(self, paths: list[tuple], use: tuple) -> bool:
        """Every arm of an `if`/`elif`/`else` chain the use comes after binds the name directly
        in that arm: together they kill what was bound before the `if`."""
        last = paths[-1]
        k = 0
        while k < min(len(last), len(use)) and last[k] == use[k]:
            k += 1
        if k >= len(last) or last[k][2] not in ("if", "match"):
            return False
        if k < len(use) and use[k][0] == last[k][0]:
            return False  # the use is inside this `if`
        prefix = use[:k]
        arms = {tuple(p[k:]) for p in paths if p[:k] == prefix}
        node = self._branch_nodes.get(last[k][0])
        if type(node) is cst.Match:
            # Every case binds it directly, and the last case takes whatever is left (`case _:`)
            cases = node.cases
            return bool(cases) and _irrefutable(cases[-1]) and all(
                any(len(arm) == 1 and arm[0] == (id(node), id(case), "match") for arm in arms) for case in cases)
        depth = 0
        while node is not None:
            entry = (id(node), id(node.body), "if")
            if not any(len(arm) == depth + 1 and arm[depth] == entry for arm in arms):
                return False
            orelse = node.orelse
            if orelse is None:
                return False
            if type(orelse) is cst.Else:
                return any(len(arm) == depth + 1 and arm[depth] == (id(node), id(orelse), "if") for arm in arms)
            arms = {arm[1:] for arm in arms if arm and arm[0] == (id(node), id(orelse), "if")}
            node = orelse
        return False

    def _entry_value(self, use: Local, depth: int) -> set:
        """What a name means before any binding in its scope: a parameter, `self`, a name of
        an enclosing scope, or a module-level name."""
        scope = self._scope_node(use.scope)
        if type(scope) is cst.FunctionDef:
            info = self._function_of(scope)
            if info is not None and use.name in info.params:
                index = info.params.index(use.name)
                if info.is_method and index == 0:
                    return {Instance(ClassRef(name=info.owner))}
                return self.resolve(Param(info.owner, info.node.name.value, index, use.name), depth)
            if (use.scope, use.name) in self._bindings:
                return set()  # bound in this function only later (a loop reaching back)
            enclosing = self._enclosing_of.get(use.scope)
            if enclosing is not None:
                # a name of the function holding this one: its value once that function has run
                return self._resolve_local(Local(enclosing, use.name, (), _END_OF_MODULE), depth)
        if type(scope) is cst.Module:
            return self._resolve_imported_or_defined(use.name)
        return self._resolve_global(use.name, depth)

    def _scope_node(self, scope_id: int) -> cst.CSTNode | None:
        if not self._scope_kinds:
            self._scope_kinds[id(self.ctx.module)] = self.ctx.module
            for info in (*self.functions.values(), *self._nested.values()):
                self._scope_kinds[id(info.node)] = info.node
            for info in self.classes.values():
                self._scope_kinds[id(info.node)] = info.node
        return self._scope_kinds.get(scope_id)

    def _function_of(self, node: cst.FunctionDef) -> FunctionInfo | None:
        if self._functions_by_node is None:
            self._functions_by_node = {id(info.node): info for info in (*self.functions.values(), *self._nested.values())}
        return self._functions_by_node.get(id(node))

    def _resolve_global(self, name: str, depth: int) -> set:
        """A module-level name as functions see it: its value once the module has run."""
        if (id(self.ctx.module), name) in self._bindings:
            return self._resolve_local(Local(id(self.ctx.module), name, (), _END_OF_MODULE), depth)
        return self._resolve_imported_or_defined(name)

    def _resolve_imported_or_defined(self, name: str) -> set:
        if name in self.classes:
            return {ClassObj(ClassRef(name=name))}
        if ("", name) in self.functions:
            return {FunctionObj("", name)}
        if name in self.ctx.aliases.relative_imports:
            level, target = self.ctx.aliases.relative_imports[name]
            return {External(("global", ClassRef(level=level, target=target)))}
        qualname = self.ctx.aliases.resolve(name)
        if qualname is not None:
            if qualname.split(".")[0] == "torch":
                return set()
            return {External(("global", ClassRef(qualname=qualname)))}
        if self.star_imports and name not in self._ambiguous_classes:
            return {External(("global", ClassRef(name=name, star=tuple(self.star_imports))))}
        return set()

    def _class_chain(self, name: str) -> list[ClassInfo]:
        """The class and its bases defined in this file, nearest first."""
        chain, pending = [], [name]
        while pending:
            info = self.classes.get(pending.pop(0))
            if info is None or info in chain:
                continue
            chain.append(info)
            pending.extend(info.bases)
        return chain

    def _resolve_attr(self, cls: str, attr: str, depth: int) -> set:
        for info in self._class_chain(cls):
            if attr in info.attrs:
                found: set = set()
                for value in info.attrs[attr]:
                    found |= self.resolve(value, depth)
                if self._frozen and any(attr in self._frozen.get(c.node.name.value, ()) for c in self._class_chain(cls)):
                    found = {v for v in found if not (type(v) is Tensor and v.kind == LEAF)}
                return found
            if attr in info.methods:
                return {BoundMethod(info.node.name.value, attr)}
        return set()

    def _attr_of_every_class(self, attr: str, depth: int) -> set:
        """`rnn.softmax(x)` where `rnn` is a parameter no caller here passes: when every class
        of this file that assigns `self.<attr>` assigns a softmax or log-softmax layer, of one
        kind, that is what the attribute is (the char-RNN tutorial's `self.softmax =
        nn.LogSoftmax(dim=1)` gives log-probabilities, so the kind comes from the layer, never
        from the name). An attribute no class here assigns stays unknown."""
        layers: set = set()
        for info in self.classes.values():
            for assigned in info.attrs.get(attr, ()):
                for layer in self.resolve(assigned, depth):
                    if type(layer) is not Layer or layer.kind not in (PROB, LOGPROB):
                        return set()
                    layers.add(layer)
        return layers if len({layer.kind for layer in layers}) == 1 else set()

    def _resolve_param(self, param: Param, depth: int) -> set:
        """The join of what every call site in this file passes for the parameter."""
        info = self._function(param.owner, param.function)
        if info is None:
            return set()
        is_init = param.owner and param.function == "__init__"
        names = [param.owner] if is_init else [param.function]
        if is_init:
            # Subclasses of this class that do not define their own __init__ call it too.
            names += [c for c, ci in self.classes.items() if param.owner in ci.bases and "__init__" not in ci.methods]
        found: set = set()
        sites = 0
        for name in names:
            for site in self._calls_by_name.get(name, ()):
                if not self._site_calls(site, param, depth):
                    continue
                sites += 1
                if site.has_star:
                    continue
                offset = 1 if info.is_method else 0
                position = param.index - offset
                if param.name in site.keywords:
                    found |= self.resolve(site.keywords[param.name], depth)
                elif 0 <= position < len(site.positional):
                    found |= self.resolve(site.positional[position], depth)
                elif param.name in info.defaults:
                    found |= self.resolve(info.defaults[param.name], depth)
        if sites == 0:
            # Nobody in this file calls it: callers in other files decide (project phase),
            # for a method through `obj.method(...)` on an instance of its class.
            return {External(("param", param.owner, param.function, param.index, param.name))}
        return found

    def _site_calls(self, site: CallSite, param: Param, depth: int) -> bool:
        for callee in self.resolve(site.callee, depth):
            kind = type(callee)
            if kind is FunctionObj and (callee.owner, callee.name) == (param.owner, param.function):
                return True
            if kind is BoundMethod and callee.name == param.function and self._inherits(callee.cls, param.owner):
                return True
            if kind is ClassObj and callee.ref.local and param.function == "__init__" and self._inherits(callee.ref.name, param.owner):
                return True
            if kind is Instance and callee.ref.local and param.function in ("forward", "__call__") and self._inherits(callee.ref.name, param.owner):
                return True
        return False

    def _inherits(self, cls: str, base: str) -> bool:
        return any(info.node.name.value == base for info in self._class_chain(cls))

    def _resolve_item(self, item: Item, depth: int) -> set:
        found: set = set()
        for container in self.resolve(item.value, depth):
            kind = type(container)
            if kind is Sequence:
                if container.kind == "moduledict" or item.index is None or isinstance(item.index, str):
                    for element in container.items:
                        found |= self.resolve(element, depth)
                elif -len(container.items) <= item.index < len(container.items):
                    found |= self.resolve(container.items[item.index], depth)
            elif kind is Tensor:
                if item.index != COPYING_INDEX:
                    found.add(container)  # indexing a tensor keeps its values' meaning
                else:  # ... in a copy: no leaf, no view, nothing autograd saved
                    found.add(Tensor(container.kind, container.origin, False, container.from_layer))
            elif kind is External:
                found.add(External(("item", container.ref, item.index)))
        return found

    def apply(self, callee: Value, depth: int = 0, flags: tuple = ()) -> set:
        """What calling a concrete value returns (`flags`: see `Applied`)."""
        kind = type(callee)
        if kind is Layer:
            return {Tensor(callee.kind, callee.origin, from_layer=True)} if callee.kind != IDENTITY else set()
        if kind is ClassObj:
            return {Instance(callee.ref)}
        if kind is Instance:
            if callee.ref.local:
                return self.forward_output(callee.ref.name, depth, flags)
            return {External(("forward", callee.ref, flags) if flags else ("forward", callee.ref))}
        if kind is FunctionObj:
            return self._returns(self._function(callee.owner, callee.name), depth, flags)
        if kind is BoundMethod:
            for info in self._class_chain(callee.cls):
                if callee.name in info.methods:
                    return self._returns(info.methods[callee.name], depth, flags)
            return set()
        if kind is Sequence and callee.kind == "sequential":
            # An nn.Sequential computes what its last layer computes; trailing layers that
            # pass their input through (Dropout, Flatten, Identity) are looked past.
            for layer in reversed(callee.items):
                layers = self.resolve(layer, depth)
                if layers and all(type(v) is Layer and v.kind == IDENTITY for v in layers):
                    continue
                found: set = set()
                for resolved in layers:
                    found |= self.apply(resolved, depth)
                return found
            return set()
        if kind is External:
            return {External(("call", callee.ref))}
        if kind is NNModule:
            if callee.qualname in api.SAVED_SEQUENCE_LAYERS and _one_direction(callee.origin.node):
                # `output, (h, c) = lstm(x)`: the output sequence is saved for backward
                saved, state = Tensor(SAVED, callee.origin, from_layer=True), Tensor(GRAD, callee.origin, from_layer=True)
                return {Sequence("tuple", (saved, state))}
            return {Tensor(GRAD, callee.origin, from_layer=True)} if callee.parametric else set()
        return set()

    def _returns(self, info: FunctionInfo | None, depth: int, flags: tuple = ()) -> set:
        if info is None:
            return set()
        found: set = set()
        chosen = _chosen_flags(info, flags)
        for index, value in enumerate(info.returns):
            conditions = info.return_conditions[index] if index < len(info.return_conditions) else ()
            if any(chosen.get(param, wanted) != wanted for param, wanted in conditions):
                continue  # made under `if log:` where this call says `log=False`
            found |= self.resolve(value, depth)
        return found

    def forward_output(self, cls: str, depth: int = 0, flags: tuple = ()) -> set:
        """What calling an instance of `cls` returns: its `__call__` when overridden, else its
        `forward`, found along its bases in this file."""
        for info in self._class_chain(cls):
            method = info.methods.get("__call__") or info.methods.get("forward")
            if method is not None:
                return {_through(v, cls) for v in self._returns(method, depth, flags)}
        for info in self._class_chain(cls):
            for base in info.bases:
                if base not in self.classes and not _is_torch_base(base, self.ctx):
                    return {External(("forward", self._base_ref(base)))}
        return set()

    def _base_ref(self, base: str) -> ClassRef:
        if base in self.ctx.aliases.relative_imports:
            level, target = self.ctx.aliases.relative_imports[base]
            return ClassRef(level=level, target=target)
        qualname = self.ctx.aliases.resolve(base)
        if qualname is not None:
            return ClassRef(qualname=qualname)
        return ClassRef(name=base, star=tuple(self.star_imports))


    # -- autograd: leaves that require grad, multi-output views, layers with parameters ----------
    # What TL103 asks: may an in-place op's target be a leaf that requires grad, or one of the
    # views `chunk`/`split`/`unbind` return of a tensor that requires grad?
    def _autograd_call(self, call: cst.Call, func: cst.BaseExpression, qualname: str | None) -> Value:
        """The value of a call that makes a leaf or multi-output views; None for any other."""
        if qualname is not None:
            if qualname in api.PARAMETER_CLASSES:
                flag = _argument(call, "requires_grad", 1)
                if flag is not None and _literal(flag.value) is not True:
                    return None
                return self._tensor_leaf(call, func)
            if qualname in api.LEAF_FACTORIES:
                flag = _argument(call, "requires_grad", 99)
                return self._tensor_leaf(call, func) if flag is not None and _literal(flag.value) is True else None
            if qualname in api.SAVED_OUTPUT_FUNCTIONS:
                return self._tensor(SAVED, self.origin(call, func))
            if qualname in api.SAVED_WHEN_INPLACE_FUNCTIONALS and qualname not in api.TENSOR_FUNCTIONS:
                flag = _argument(call, "inplace", 99)
                return self._tensor(SAVED, self.origin(call, func)) if flag is not None and _literal(flag.value) is True else None
            if qualname in api.MULTI_OUTPUT_VIEW_FUNCTIONS:
                first = _argument(call, "input", 0) or _argument(call, "tensor", 0)
                if first is None:
                    return None
                return Split(self.value(first.value), self.origin(call, func), not self._grad_disabled())
            return None
        if type(func) is not cst.Attribute:
            return None
        method = func.attr.value
        if method == "requires_grad_":
            args = [a for a in call.args if not a.star]
            receiver = self.value(func.value)
            if args and _literal(args[0].value) is not True:
                # `nn.Conv2d(...).requires_grad_(False)`: its parameters are no grad leaves.
                if type(receiver) is NNModule:
                    return NNModule(receiver.qualname, receiver.origin, False)
                return None if type(receiver) is Tensor and receiver.kind == LEAF else receiver
            return Union_((receiver, self._tensor_leaf(call, func)))
        if method in api.SAVED_OUTPUT_METHODS and self._saving_method(func):
            return self._tensor(SAVED, self.origin(call, func))
        if method in api.MAY_COPY_METHODS:
            return MayCopy(self.value(func.value))
        if method in api.VIEW_ONLY_METHODS:
            return View(self.value(func.value), Applied(self.value(func)))
        if method in api.MULTI_OUTPUT_VIEW_METHODS:
            receiver = func.value
            if type(receiver) is cst.Name:
                own = self._method()
                if own is not None and receiver.value == own[1]:
                    return None  # the module's own `split` method
            # Resolved as a view only when the receiver turns out to be a tensor that requires
            # grad; otherwise as the call it would have been (`text.split(",")`, a user class's
            # own `split` method).
            return Split(self.value(receiver), self.origin(call, func), not self._grad_disabled(), Applied(self.value(func)))
        return None

    def _tensor_leaf(self, call: cst.Call, func: cst.BaseExpression) -> Tensor:
        text = self.ctx.module.code_for_node(func)
        if len(text) > 40 or "\n" in text:
            text = "." + text.rpartition(".")[2] if "." in text else text[:40]
        if text.endswith("requires_grad_"):
            return Tensor(LEAF, Origin("`.requires_grad_()`", call))
        suffix = "" if text.endswith("Parameter") else ", requires_grad=True"
        return Tensor(LEAF, Origin(f"`{text}(...{suffix})`", call))

    def _torch_module(self, call: cst.Call, qualname: str) -> Value:
        """A torch.nn layer no table above knows (`nn.Linear`, `nn.GELU`): an `NNModule`."""
        head, _, last = qualname.rpartition(".")
        if not head.startswith("torch.nn") or head.startswith("torch.nn.functional") or not last[:1].isupper():
            return None
        if qualname in api.SAVED_OUTPUT_LAYERS:
            return Layer(SAVED, self.origin(call, call.func), _built_inplace(call, qualname))
        inplace = _built_inplace(call, qualname)
        if inplace and qualname in api.SAVED_WHEN_INPLACE_LAYERS:
            return Layer(SAVED, self.origin(call, call.func), True)
        if inplace:
            return Layer(IDENTITY if "Dropout" in last else "inplace", self.origin(call, call.func), True)
        return NNModule(qualname, self.origin(call, call.func), qualname in api.PARAMETRIC_LAYERS)

    def _sequential_layers(self, call: cst.Call) -> list:
        """The layers of `nn.Sequential(a, b, *rest)` in order; of a list spread into it
        (`nn.Sequential(*layers)`), the layer put in it last in the same function: what the
        Sequential computes is what its last layer does."""
        layers = []
        for arg in call.args:
            if arg.keyword is not None:
                continue
            if not arg.star:
                layers.append(self.value(arg.value))
            elif arg.star == "*" and type(arg.value) is cst.Name:
                last = self._last_listed(arg.value.value)
                if last is not None:
                    layers.append(self.value(last))
        return layers

    def _last_listed(self, name: str) -> cst.BaseExpression | None:
        """The element put last, in source order, into the list `name` of the enclosing
        function: `name = [..., x]`, `name += [..., x]`, `name.append(x)`, `name.extend([..., x])`."""
        from torchlint.static.walker import iter_nodes

        function = self.ctx.enclosing_function()
        if function is None:
            return None
        last = None
        for node in iter_nodes(function.body, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            added = None
            kind = type(node)
            if kind is cst.Assign and any(type(t.target) is cst.Name and t.target.value == name for t in node.targets):
                added = node.value
            elif kind is cst.AugAssign and type(node.target) is cst.Name and node.target.value == name:
                added = node.value
            elif (
                kind is cst.Call
                and type(node.func) is cst.Attribute
                and type(node.func.value) is cst.Name
                and node.func.value.value == name
                and node.func.attr.value in ("append", "extend")
                and len(node.args) == 1
            ):
                added = node.args[0].value if node.func.attr.value == "extend" else cst.List([cst.Element(node.args[0].value)])
            if type(added) in (cst.List, cst.Tuple) and added.elements:
                last = added.elements[-1].value
            elif type(added) in (cst.ListComp, cst.GeneratorExp):
                last = added.elt
        return last

    def _listed(self, expr: cst.BaseExpression) -> Value:
        """Any element of `expr`: a list, or the element of a comprehension (`nn.ModuleList(
        nn.Linear(a, b) for a, b in ...)`)."""
        if type(expr) in (cst.GeneratorExp, cst.ListComp):
            return self.value(expr.elt)
        return Item(self.value(expr), None)

    def _layer_parameter(self, layer: NNModule, name: str) -> set:
        if not layer.parametric or name not in api.LAYER_PARAMETERS:
            return set()
        short = layer.origin.text.strip("`").rpartition("(")[0].rpartition(".")[2] or "layer"
        return {Tensor(LEAF, Origin(f"`{name}` of an `nn.{short}`", layer.origin.node, layer.origin.path, layer.origin.line))}

    def _resolve_split(self, value: Split, depth: int) -> set:
        bases = self.resolve(value.base, depth)
        if any(type(b) is Tensor and (b.kind == LEAF or (b.kind in (GRAD, MULTI_VIEW) and b.recorded)) for b in bases):
            return {Tensor(MULTI_VIEW, value.origin, value.recorded)}
        return set(self.resolve(value.fallback, depth)) if value.fallback is not None else set()

    def _resolve_view(self, value: View, depth: int) -> set:
        kept = {b for b in self.resolve(value.base, depth) if type(b) is Tensor and b.kind in (LEAF, MULTI_VIEW)}
        return kept or (set(self.resolve(value.fallback, depth)) if value.fallback is not None else set())

    def _requires_grad_assignment(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """`x.requires_grad = True` makes x a leaf that requires grad (on anything else it
        raises); `self.w.requires_grad = False` freezes a parameter of the class."""
        if type(target) is not cst.Attribute or target.attr.value != "requires_grad":
            return
        self._requires_grad_statement(target.value, _literal(value) is True, target)

    def leave_Expr(self, node: cst.Expr) -> None:
        # On leaving: readers visiting the statement's call still see the value before it.
        call = node.value
        if type(call) is not cst.Call:
            return
        func = call.func
        if type(func) is cst.Attribute and func.attr.value == "requires_grad_":
            args = [a for a in call.args if not a.star]
            self._requires_grad_statement(func.value, not args or _literal(args[0].value) is True, call)
            return
        self._inplace_statement(call, func)

    def _inplace_statement(self, call: cst.Call, func: cst.BaseExpression) -> None:
        """`x.sigmoid_()`, `torch.relu_(x)`, `F.elu(x, inplace=True)`, `self.act(x)`: x now
        holds what the op outputs (when it saves that, autograd saved x)."""
        if type(func) is cst.Attribute and type(func.value) is cst.Name and func.attr.value.endswith("_"):
            if func.attr.value == "scatter_" and _scatters_ones(call) and self.qualname(func) is None:
                name = func.value.value
                self._bind(name, Scattered(self._name(name), self.origin(call, func)))
                return
            if func.attr.value in api.SAVED_OUTPUT_METHODS and self._saving_method(func) and self.qualname(func) is None:
                name = func.value.value
                self._bind(name, InPlace(self._name(name), self._tensor(SAVED, self.origin(call, func))))
            return
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if not positional or type(positional[0].value) is not cst.Name:
            return
        name = positional[0].value.value
        qualname = self.qualname(func)
        if qualname is not None:
            if qualname.split(".")[0] != "torch":
                return
            op = self._autograd_call(call, func, qualname) if qualname.endswith("_") or qualname in api.SAVED_WHEN_INPLACE_FUNCTIONALS else None
            if qualname in api.SAVED_WHEN_INPLACE_FUNCTIONALS:
                flag = _argument(call, "inplace", 99)
                if flag is None or _literal(flag.value) is not True:
                    return
                if op is None:
                    op = self._tensor(api.TENSOR_FUNCTIONS.get(qualname, SAVED), self.origin(call, func))
            if type(op) is Tensor:
                self._bind(name, InPlace(self._name(name), op))
            return
        if len(positional) == 1 and (
            (type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self")
            or (type(func) is cst.Name and func.value not in _BUILTINS)
        ):
            # A layer called for its side effect: in place only if it was built so (resolved later).
            self._bind(name, InPlace(self._name(name), self.value(func)))

    def _saving_method(self, func: cst.Attribute) -> bool:
        """`x.amax(...)` on a tensor: not `self.norm(x)`, `self.encoder.norm(x)`, or a method
        of an imported module."""
        root = func.value
        while type(root) is cst.Attribute:
            root = root.value
        if type(root) is cst.Name:
            own = self._method()
            if own is not None and root.value == own[1] and (func.value is root or func.attr.value == "norm"):
                return False
            if root.value in self._imported or root.value in self.ctx.aliases.relative_imports:
                return False
        return True

    def _untracked_input(self, call: Any) -> bool:
        """The op's input is outside autograd (`x.detach()`, `x.data`, `.numpy()`, a literal):
        its output requires no grad, and nothing is saved."""
        if type(call) is not cst.Call:
            return False
        func = call.func
        if type(func) is cst.Attribute and self.qualname(func) is None:
            expr = func.value
        else:
            positional = [a for a in call.args if a.keyword is None and not a.star]
            if not positional:
                return False
            expr = positional[0].value
        while True:
            kind = type(expr)
            if kind is cst.Attribute:
                if expr.attr.value == "data":
                    return True
                expr = expr.value
            elif kind is cst.Call and type(expr.func) is cst.Attribute:
                if expr.func.attr.value in ("detach", "numpy"):
                    return True
                expr = expr.func.value
            elif kind is cst.Subscript:
                expr = expr.value
            else:
                return kind in (cst.Integer, cst.Float, cst.SimpleString, cst.List, cst.Tuple)

    def _resolve_inplace(self, value: InPlace, depth: int) -> set:
        found = set(self.resolve(value.before, depth))
        if type(value.op) is Tensor:
            found.add(value.op)
            return found
        for layer in self.resolve(value.op, depth):
            if type(layer) is Layer and layer.inplace and layer.kind in SAVED_KINDS:
                found.add(Tensor(layer.kind, layer.origin, from_layer=True))
        return found

    def sole_layer(self, cls: str, attr: str) -> Layer | None:
        """The layer `self.<attr>` of `cls` is, when the class (or a base here) assigns it
        once and that resolves to one layer: `nn.ReLU() if relu else nn.Identity()` is not one."""
        layer = self._sole_value(cls, attr)
        return layer if type(layer) is Layer else None

    def _sole_value(self, cls: str, attr: str) -> Value:
        for info in self._class_chain(cls):
            if attr in info.attrs:
                values = info.attrs[attr]
                if len(values) != 1:
                    return None
                resolved = self.resolve(values[0])
                if len(resolved) != 1:
                    return None
                (value,) = resolved
                return value
        return None

    def sole_layers(self) -> frozenset[int]:
        """Construction calls (by id) of every layer that is some class's `sole_layer`."""
        found = self.memo.get("sole layers")
        if found is None:
            ids = set()
            for name, info in self.classes.items():
                for attr in info.attrs:
                    layer = self._sole_value(name, attr)
                    if type(layer) is NNModule and layer.qualname not in api.SAVED_SEQUENCE_LAYERS:
                        continue  # only an LSTM's output of the layers known by name is saved
                    if type(layer) in (Layer, NNModule) and layer.origin.node is not None:
                        ids.add(id(layer.origin.node))
            found = self.memo["sole layers"] = frozenset(ids)
        return found

    def owns_layers(self, cls: str) -> bool:
        """Whether `cls` (or a base here) holds a layer, a parameter, a container of layers or
        an instance of a class in some `self.<attr>`: a module with weights, not a transform."""
        for info in self._class_chain(cls):
            for values in info.attrs.values():
                for value in values:
                    for resolved in self.resolve(value):
                        kind = type(resolved)
                        if kind in (NNModule, Layer, Instance) or (kind is Tensor and resolved.kind == LEAF):
                            return True
                        if kind is Sequence and resolved.kind in ("sequential", "modulelist", "moduledict"):
                            return True
        return False

    def bound_in(self, function: cst.FunctionDef, name: str) -> bool:
        """Whether `name` is assigned anywhere in `function` (a parameter never reassigned is not)."""
        return (id(function), name) in self._bindings

    def _requires_grad_statement(self, receiver: cst.BaseExpression, flag: bool, node: cst.CSTNode) -> None:
        if type(receiver) is cst.Name:
            self._bind(receiver.value, Tensor(LEAF, Origin("`.requires_grad_()`", node)) if flag else None)
        elif not flag and type(receiver) is cst.Attribute:
            method = self._method()
            dotted = dotted_name(receiver)
            if dotted is None:
                return
            if method is not None and dotted.startswith(method[1] + "."):
                # `self.w` or a deeper path (`self.embed.weight`), as written after `self.`
                self._frozen.setdefault(method[0], set()).add(dotted.partition(".")[2])
            else:
                # `conv.weight.requires_grad = False` in a function: that path, in that scope.
                scope = self.ctx.ancestors[self._scope_index()]
                self._frozen_paths.add((id(scope), dotted))

    def frozen_path(self, scope: cst.CSTNode, dotted: str) -> bool:
        """Whether `<dotted>.requires_grad = False` (or `requires_grad_(False)`) is written in
        `scope` (a function, or the module), for a path not on `self`."""
        return (id(scope), dotted) in self._frozen_paths

    def frozen(self, cls: str, path: str) -> bool:
        """Whether some method of `cls` (or of a base in this file) turns off `requires_grad`
        of `self.<path>` (`path`: `w`, `embed.weight`)."""
        return bool(self._frozen) and any(path in self._frozen.get(c.node.name.value, ()) for c in self._class_chain(cls))


# -- helpers ----------------------------------------------------------------------------------
def _through(value: Value, cls: str) -> Value:
    if type(value) is Tensor and not value.origin.via:
        return Tensor(value.kind, value.origin.through(cls), value.recorded, value.from_layer)
    return value


def _reach(binding: tuple, use: tuple) -> str:
    """Whether a binding made under branch path `binding` reaches a later use under `use`:
    "surely" (its path is a prefix of the use's), "never" (the other arm of the same `if`),
    or "maybe" (a branch the use comes after, or a loop/try the use is also in)."""
    common = 0
    for mine, theirs in zip(binding, use):
        if mine != theirs:
            break
        common += 1
    if common == len(binding):
        return "surely"
    if common < len(use) and use[common][0] == binding[common][0] and binding[common][2] in ("if", "match"):
        return "never"
    return "maybe"


def _common_prefix(one: tuple, other: tuple) -> int:
    common = 0
    for mine, theirs in zip(one, other):
        if mine != theirs:
            break
        common += 1
    return common


def _carrying_loop(binding: tuple, use: tuple) -> int:
    """The depth, in both paths, of the loop through whose next iteration a later binding
    reaches a use (see `_loop_carried`)."""
    for depth, (mine, theirs) in enumerate(zip(binding, use)):
        if mine[2] == "loop" and mine[1] == theirs[1]:
            return depth
    return len(use)


def _loop_carried(binding: tuple, use: tuple) -> bool:
    """A binding after the use reaches it through the next iteration of a loop holding both."""
    for mine, theirs in zip(binding, use):
        if mine[0] != theirs[0]:
            return False
        if mine[2] == "loop" and mine[1] == theirs[1]:
            return True
        if mine[1] != theirs[1]:
            return False
    return False


_TRAINING_FLAGS = frozenset({"training", "is_training", "train_mode"})
_EVAL_FLAGS = frozenset({"eval", "evaluate", "evaluating", "is_eval", "eval_mode", "inference", "is_inference", "predict"})


def _training_test(test: cst.BaseExpression) -> bool | None:
    """True when the test holds in training mode (`self.training`, a `training` flag), False
    when it holds outside it (`not self.training`, an `eval`/`inference` flag), else None."""
    negated = False
    while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        negated = not negated
        test = test.expression
    name = test.attr.value if type(test) is cst.Attribute else test.value if type(test) is cst.Name else None
    if name in _TRAINING_FLAGS:
        return not negated
    if name in _EVAL_FLAGS:
        return negated
    return None


def _disables_grad(expr: cst.BaseExpression) -> bool:
    func = expr.func if type(expr) is cst.Call else expr
    name = dotted_name(func) or ""
    if not name.endswith(("no_grad", "inference_mode")):
        return False
    if type(expr) is cst.Call and expr.args and type(expr.args[0].value) is cst.Name:
        return expr.args[0].value.value != "False"
    return True


def _irrefutable(case: cst.MatchCase) -> bool:
    """`case _:` or `case name:` without a guard: the case every subject reaches."""
    pattern = case.pattern
    return case.guard is None and type(pattern) is cst.MatchAs and pattern.pattern is None


def _always_leaves(block: cst.BaseSuite) -> bool:
    """The block ends in `return` or `raise` (so what follows its `if` is skipped)."""
    body = block.body
    if not body:
        return False
    last = body[-1]
    if type(last) is cst.SimpleStatementLine:
        return bool(last.body) and type(last.body[-1]) in (cst.Return, cst.Raise)
    return type(last) in (cst.Return, cst.Raise)


def _one_direction(call: Any) -> bool:
    """An `nn.LSTM(...)` built without `bidirectional=True`: a bidirectional one concatenates
    its directions' outputs, and on the CPU that copy is what the caller gets (nothing saved)."""
    if type(call) is not cst.Call:
        return False
    flag = _argument(call, "bidirectional", 6)
    return flag is None or _literal(flag.value) is False


def _call_flags(call: cst.Call) -> tuple:
    """The literal `True`/`False` keyword arguments of `call` and its positional count; none
    when it spreads `*args` or `**kwargs` (any flag may be in them)."""
    if any(arg.star for arg in call.args):
        return ()
    flags = [("#positional", sum(1 for arg in call.args if arg.keyword is None))]
    for arg in call.args:
        if arg.keyword is not None and _literal(arg.value) is not None:
            flags.append((arg.keyword.value, _literal(arg.value)))
    return tuple(flags)


def _chosen_flags(info: FunctionInfo, flags: tuple) -> dict[str, bool]:
    return chosen_flags(info.params[1:] if info.is_method else info.params, info.flag_defaults, flags)


def chosen_flags(params: tuple | list, flag_defaults: dict[str, bool], flags: tuple | list) -> dict[str, bool]:
    """Parameter -> the literal value a call gives it: its keyword, else its literal default
    when the call passes nothing in its place (`params`: the callee's, without `self`).
    Nothing is known without the call's flags."""
    if not flags:
        return {}
    given = dict((key, value) for key, value in flags)
    positional = given.pop("#positional", 0)
    params = list(params)
    chosen = {}
    for param, default in flag_defaults.items():
        if param in params and params.index(param) < positional:
            continue  # passed by position: its value is not read here
        chosen[param] = default
    chosen.update(given)
    return chosen


def _flag_conditions(ancestors: list, scope_index: int, info: FunctionInfo) -> tuple:
    """The (parameter, value) pairs a `return` at the end of `ancestors` is made under:
    inside `if flag:` (True), its `else` (False), `if not flag:` the other way round, and
    after an `if flag: return ...` earlier in an enclosing block (False)."""
    conditions = []

    def flag_of(test: cst.BaseExpression) -> tuple[str, bool] | None:
        if type(test) is cst.Name and test.value in info.params:
            return test.value, True
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not and type(test.expression) is cst.Name:
            return (test.expression.value, False) if test.expression.value in info.params else None
        return None

    for index in range(scope_index + 1, len(ancestors) - 1):
        node, child = ancestors[index], ancestors[index + 1]
        if type(node) is cst.If:
            flag = flag_of(node.test)
            if flag is not None and child is not node.test:
                conditions.append((flag[0], flag[1] if child is node.body else not flag[1]))
        elif type(node) is cst.IndentedBlock:
            for statement in node.body:
                if statement is child:
                    break
                if type(statement) is cst.If and statement.orelse is None and _always_leaves(statement.body):
                    flag = flag_of(statement.test)
                    if flag is not None:
                        conditions.append((flag[0], not flag[1]))
    return tuple(conditions)


def _called_name(func: cst.BaseExpression) -> str | None:
    if type(func) is cst.Name:
        return func.value
    if type(func) is cst.Attribute:
        return func.attr.value
    return None


def _argument(call: cst.Call, name: str, position: int) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return positional[position] if position < len(positional) else None


def _looks_like_dim(call: cst.Call) -> bool:
    """`Tensor.softmax(dim)` takes a dimension: an int, `-1`, or a name mentioning dim/axis.
    Anything else (`obj.softmax(x)`) is probably some other object's method."""
    if any(arg.keyword is not None and arg.keyword.value == "dim" for arg in call.args):
        return True
    positional = [arg for arg in call.args if arg.keyword is None]
    if not positional:
        return not call.args
    first = positional[0].value
    if type(first) is cst.UnaryOperation and type(first.operator) is cst.Minus:
        first = first.expression
    if type(first) is cst.Integer:
        return True
    name = dotted_name(first)
    if name is None:
        return False
    last = name.rpartition(".")[2].lower()
    return "dim" in last or "axis" in last


def _is_torch_base(base: str, ctx) -> bool:
    qualname = ctx.aliases.resolve(base) if base else None
    return base in ("", "object") or (qualname is not None and qualname.split(".")[0] == "torch")


def _literal(expr: cst.BaseExpression) -> bool | None:
    """True or False for the literal names, None for anything else."""
    if type(expr) is cst.Name and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


def is_basic_index(node: cst.Subscript) -> bool:
    """Integer, slice, None and `...` indexing returns a view; a name, a tensor or a mask may
    copy."""
    for element in node.slice:
        index = element.slice
        if type(index) is cst.Slice:
            continue
        value = index.value
        if type(value) is cst.UnaryOperation and type(value.operator) is cst.Minus:
            value = value.expression
        if type(value) in (cst.Integer, cst.Ellipsis) or (type(value) is cst.Name and value.value == "None"):
            continue
        return False
    return True


def _scatters_ones(call: cst.Call) -> bool:
    """`.scatter_(dim, index, 1)` / `value=1.0`: writes ones (no `reduce=`, not a tensor `src`)."""
    if any(arg.keyword is not None and arg.keyword.value == "reduce" for arg in call.args):
        return False
    written = _argument(call, "value", 2) or _argument(call, "src", 2)
    if written is None:
        return False
    value = written.value
    return type(value) in (cst.Integer, cst.Float) and float(value.value) == 1.0


def _returned(values: set) -> set:
    """What a call returns. A leaf that comes back from a call is no longer vouched for (marked
    not `recorded`), nor is one in a returned tuple: functions returning a parameter on one
    path return a computed tensor on another (`return kernel * t, b` after BatchNorm,
    `return conv.weight, b` without), and the model joins every return."""
    out = set()
    for v in values:
        kind = type(v)
        if kind is Tensor and v.kind == LEAF:
            out.add(Tensor(v.kind, v.origin, False, v.from_layer))
        elif kind is Sequence and v.kind in ("tuple", "list"):
            out.add(Sequence(v.kind, tuple(Returned(item) for item in v.items)))
        else:
            out.add(v)
    return out


def _built_inplace(call: cst.Call, qualname: str) -> bool:
    """`nn.ReLU(inplace=True)`, `nn.Dropout(0.1, True)`."""
    flag = _argument(call, "inplace", 99)
    if flag is None:
        position = api.INPLACE_POSITION.get("torch.nn." + qualname.rpartition(".")[2])
        if position is None:
            return False
        flag = _argument(call, "inplace", position)
    return flag is not None and _literal(flag.value) is True
