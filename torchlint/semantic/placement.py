"""Where a file's tensors are placed: the questions TL201 asks before reading a device flow.

The device flow itself (`torchlint.semantic.devices.Flow`) reads one body. This analysis
decides which bodies to read and what each starts from, from facts gathered in the engine's
single traversal:

- which functions make tensors (call a factory) or call one of this file that does;
- what a function's parameters are: device tensors (a module's `forward` inputs, parameters
  whose `.shape`/`.size()` is read or annotated `Tensor`), ints (passed to `range()` or as a
  size), or modules (`model` handed to a driver, as the semantic model resolves it);
- which functions handle data on the CPU by design (`runs_in_data_loading`: datasets,
  samplers, collate and batch builders, preprocessing classes; a function whose every caller
  moves its result, `callers_move_result`; one that calls `.numpy()` on its tensors);
- which attributes of a module hold parameters (`parameter_attributes`,
  `torchlint.semantic.parameters`) and whether the file moves a model (`moves_a_model`);
- what a call of a function of this file returns, in the device domain.

`meetings()` answers the rule's question: where does a CPU tensor from a factory meet a
device tensor?
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Iterator, Optional

import libcst as cst

from torchlint.analysis import Analysis
from torchlint.semantic.devices import (
    FACTORIES,
    FACTORY_NAMES,
    LEGACY_CONSTRUCTORS,
    Flow,
    FlowSetup,
    Meeting,
    Module,
    annotation_text,
    is_literal,
    is_tensor_annotation,
    iter_params,
    joined_return,
    nested_scopes,
)
from torchlint.semantic.list_guards import made_for_list_form
from torchlint.semantic.model import SemanticModel
from torchlint.semantic.parameters import SelfAttributes
from torchlint.semantic.values import GlobalName, Param, SelfAttr
from torchlint.static.names import dotted_name
from torchlint.static.walker import iter_nodes

if TYPE_CHECKING:
    from torchlint.static.context import FileContext

#: Names of calls that may make a CPU tensor: the factories, the legacy constructors, normal.
CREATING_NAMES = FACTORY_NAMES | {q.rpartition(".")[2] for q in LEGACY_CONSTRUCTORS} | {"normal"}
#: Creating names that are also Python builtins: a bare `range(n)` is the builtin unless the
#: file imported torch's. (Every loop calls it: taken for a factory, it sent every function
#: with a loop through the device flow.)
BUILTIN_CREATING_NAMES = frozenset({"range"})

#: Parameter uses that show it is a tensor (numpy shares .shape and .dtype; the spec accepts them).
TENSOR_EVIDENCE_ATTRIBUTES = frozenset({"shape", "device", "dtype", "ndim"})
TENSOR_EVIDENCE_METHODS = frozenset({"size", "dim"})
#: Calls that take a size or an int: a parameter passed to one is no tensor.
INT_CONSUMERS = frozenset({"range", "int", "float", "bool", "str"})


DATA_LOADING_METHODS = frozenset({"__getitem__", "__getitems__", "__iter__", "__next__"})
DATA_LOADING_BASES = ("Dataset", "Sampler", "DataPipe", "Collator", "Processor")
#: Classes named so prepare data (`Preprocessing`, `RandomTransform`, `Augmenter`).
PREPARING_CLASS_WORDS = ("Preprocess", "Transform", "Augment", "Tokeniz")
#: Functions that assemble a batch before it is moved (`get_batch` in nanoGPT-style scripts).
BATCH_BUILDERS = ("get_batch", "make_batch", "build_batch")
#: A file that changes the default device makes every factory follow it.
DEFAULT_DEVICE_SETTERS = ("set_default_device", "set_default_tensor_type")


#: Names that read as a model when something moves them to a device.
MODEL_WORDS = ("model", "net", "encoder", "decoder", "generator", "discriminator", "classifier", "policy", "critic", "actor")


class Placement(Analysis):
    """Per-file facts about where tensors live, and the device flows read from them."""

    requires = (SemanticModel,)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._enabled = not any(setter in ctx.text for setter in DEFAULT_DEVICE_SETTERS)
        self._class_info: dict[int, tuple[frozenset, frozenset]] = {}
        #: functions (and None: the module's own statements) that call something named like
        #: a factory, and the plain or `self.` names each function calls
        self._with_factories: set = set()
        self._called: dict[int, set[str]] = {}
        self._functions: list[tuple[cst.FunctionDef, Optional[cst.ClassDef]]] = []
        #: for each plain name called in the file: how often, and how often its result is
        #: moved to a device right away (`name(...).cuda()`, `fabric.to_device(name(...))`)
        self._calls: dict[str, int] = {}
        self._moved: dict[str, int] = {}
        self._flows: dict[int, Optional[Flow]] = {}
        self._model_moved: Optional[bool] = None
        #: factory call -> the body (function or module) that made it
        self._homes: dict[int, cst.CSTNode] = {}
        #: what each function's body shows before its flow runs (read while visiting)
        self._scans: dict[int, _BodyScan] = {}
        #: nested functions of data-loading functions
        self._preparing: set[int] = set()
        #: private module-level name -> (calling function or None, whether the call is in the
        #: body of an `if <tracing check>:`) for each call of it in this file
        self._private_calls: dict[str, list[tuple[Optional[cst.FunctionDef], bool]]] = {}
        self._exporting: dict[int, bool] = {}
        #: each name imported from outside torch that this file calls -> the function (or
        #: None: module code) of each call of it
        self._imported_sites: dict[str, list[Optional[cst.FunctionDef]]] = {}
        self._mentions: Optional[dict[str, int]] = None

    @cached_property
    def model(self) -> SemanticModel:
        # A property: the engine hands analyses their dependencies only once all are built.
        return self.ctx.analysis(SemanticModel)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        cls = self._method_class(node)
        enclosing = self.ctx.enclosing_function()
        if enclosing is not None and (id(enclosing) in self._preparing or runs_in_data_loading(enclosing, None)):
            self._preparing.add(id(node))  # a helper nested in batch building builds batches too
        self._functions.append((node, cls))

    def _scan(self, function: cst.FunctionDef) -> _BodyScan:
        scan = self._scans.get(id(function))
        if scan is None:
            scan = self._scans[id(function)] = _BodyScan()
        return scan

    def _visiting_qualname(self, expr: cst.BaseExpression) -> Optional[str]:
        found = self.ctx.qualname(expr)
        if found is None and type(expr) is cst.Name and expr.value in CREATING_NAMES:
            return self.model.torch_star_name(expr.value)
        return found

    def visit_Attribute(self, node: cst.Attribute) -> None:
        """`x.shape`, `x.device`...: evidence that `x` is a tensor in this function."""
        if type(node.value) is cst.Name and node.attr.value in TENSOR_EVIDENCE_ATTRIBUTES:
            function = self.ctx.enclosing_function()
            if function is not None:
                self._scan(function).evident.add(node.value.value)

    def visit_Call(self, node: cst.Call) -> None:
        """Remember which functions call something named like a factory, and which names each
        calls (a function calling one that makes tensors reads what it returns)."""
        func = node.func
        function = self.ctx.enclosing_function()
        if function is not None:
            _scan_call(node, self._visiting_qualname, self._scan(function))
        short = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
        if short is None:
            return
        if type(func) is cst.Name:
            self._calls[short] = self._calls.get(short, 0) + 1
            aliases = self.ctx.aliases
            if short in aliases.relative_imports or not aliases.aliases.get(short, "torch.").startswith(("torch.", "builtins.")):
                # a dict lookup: no qualname for every call
                self._imported_sites.setdefault(short, []).append(function)
            if short.startswith("_"):
                sites = self._private_calls.setdefault(short, [])
                sites.append((function, _under_export_check(self.ctx.ancestors)))
        elif _on_self(func):
            key = f"self.{short}"
            self._calls[key] = self._calls.get(key, 0) + 1
        if short in ("cuda", "to") or short in MOVING_FUNCTIONS:
            moved = _moved_call(node)
            if moved is not None:
                self._moved[moved] = self._moved.get(moved, 0) + 1
        if short in CREATING_NAMES and not (short in BUILTIN_CREATING_NAMES and type(func) is cst.Name
                                            and not (self._visiting_qualname(func) or "").startswith("torch.")):
            self._with_factories.add(id(function) if function is not None else None)
        elif function is not None:
            self._called.setdefault(id(function), set()).add(short)

    def visit_Assign(self, node: cst.Assign) -> None:
        """`y = name(...)` whose next use in the block is `y = y.to(device)`: moved right away."""
        if len(node.targets) != 1 or type(node.targets[0].target) is not cst.Name or type(node.value) is not cst.Call:
            return
        callee = _called(node.value.func)
        if callee is not None and _next_use_moves(self.ctx.ancestors, node, node.targets[0].target.value):
            self._moved[callee] = self._moved.get(callee, 0) + 1

    # -- the questions ------------------------------------------------------------------------
    def meetings(self) -> Iterator[tuple[Meeting, FlowSetup]]:
        """Where a CPU tensor from a factory meets a device tensor, with the setup of the body
        the meeting is in: each function that makes tensors (or calls one of this file that
        does), then the module's own statements. Empty in a file that sets a default device.
        A pathological expression may raise RecursionError (libcst's visitors recurse too)."""
        if not self._enabled or not self._with_factories:
            return
        makers = {node.name.value for node, _ in self._functions if id(node) in self._with_factories}
        for node, cls in self._functions:
            if node.name.value == "__init__":
                continue
            if id(node) in self._with_factories or self._called.get(id(node), set()) & makers:
                flow = self.flow_of(node, cls)
                if flow is None:
                    continue
                for meeting in flow.meetings.values():
                    yield meeting, flow.setup
        if None in self._with_factories:
            yield from self._script_meetings()

    def _script_meetings(self) -> Iterator[tuple[Meeting, FlowSetup]]:
        """The module's own statements: a training script's loop at top level."""
        module = self.ctx.module
        setup = FlowSetup({}, self._qualname_in(None), module_of=self._module_of(None, None), returns=self._returns(None), body=module)
        flow = self._run(setup, module)
        for meeting in flow.meetings.values():
            yield meeting, setup

    def home_of(self, origin: cst.Call, default: cst.CSTNode) -> cst.CSTNode:
        """The body (function or module) whose flow made the factory call `origin`."""
        return self._homes.get(id(origin), default)

    def is_forward(self, body: cst.CSTNode) -> bool:
        """Whether `body` is the `forward` of an `nn.Module`-like class of this file."""
        cls = next((c for node, c in self._functions if node is body), None)
        return cls is not None and is_module_forward(self.ctx, body, cls)

    def flow_of(self, node: cst.FunctionDef, cls: Optional[cst.ClassDef]) -> Optional[Flow]:
        """The device flow of one function, read once (callers read what it returns)."""
        key = id(node)
        if key in self._flows:
            return self._flows[key]
        self._flows[key] = None  # a recursive call reads nothing back
        setup = self._setup(node, cls)
        flow = self._run(setup, node.body) if setup is not None else None
        self._flows[key] = flow
        return flow

    def _run(self, setup: FlowSetup, body) -> Flow:
        flow = Flow(setup)
        if type(body) is cst.Module:
            for statement in body.body:
                flow.statement(statement)
        else:
            flow.run(body)
        for origin in flow.made:
            self._homes.setdefault(id(origin), setup.body)
        return flow

    def _setup(self, node: cst.FunctionDef, cls: Optional[cst.ClassDef]) -> Optional[FlowSetup]:
        qualname = self._qualname_in(node)
        scan = self._scans.get(id(node)) or _BodyScan()
        if cls is not None and is_module_forward(self.ctx, node, cls):
            setup = self._forward_setup(node, cls, scan, qualname)
        elif runs_in_data_loading(node, cls) or id(node) in self._preparing:
            return None
        elif cls is None and self.runs_only_when_exporting(node):
            return None  # an ONNX/TorchScript export path, which exports on the CPU
        elif self.callers_move_result(node.name.value if cls is None else f"self.{node.name.value}"):
            return None  # CPU preprocessing: `preprocess(x).cuda()`, `fabric.to_device(jitter(b))`
        else:
            setup = self._helper_setup(node, scan, qualname)
            if numpy_of_tensor_params(node, set(setup.tensor_params)):
                return None  # `.numpy()` of what its tensors compute, with no `.cpu()`: they are CPU tensors
        class_name = cls.name.value if cls is not None else None
        setup.module_of = self._module_of(node, class_name)
        setup.returns = self._returns(class_name)
        setup.body = node
        if setup.self_name is None and class_name is not None:
            params = list(iter_params(node))
            setup.self_name = params[0].name.value if params else None
        return setup

    # -- what the semantic model answers -------------------------------------------------------
    def _module_of(self, function: Optional[cst.FunctionDef], class_name: Optional[str]):
        """A callee or receiver the semantic model resolves to modules only: a parameter every
        caller passes a model to, a module-level model, `self.<submodule>`."""
        model = self.model
        info = model.function_info(function) if function is not None else None
        local = self.ctx.bindings_of(function) if function is not None else ()

        def module_of(expr: cst.BaseExpression) -> Optional[Module]:
            value = None
            if type(expr) is cst.Name:
                name = expr.value
                if info is not None and name in info.params:
                    index = info.params.index(name)
                    if not (info.is_method and index == 0):
                        value = Param(info.owner, info.node.name.value, index, name)
                elif name not in local:
                    value = GlobalName(name)
            elif (
                class_name is not None
                and info is not None
                and info.is_method
                and type(expr) is cst.Attribute
                and type(expr.value) is cst.Name
                and expr.value.value == info.params[0]
            ):
                value = SelfAttr(class_name, expr.attr.value)
            if value is None:
                return None
            resolved = model.resolve(value)
            if resolved and all(model.is_module(v) for v in resolved):
                # A model handed to a driver (`evaluate(model)`) in a file that moves its
                # models to the device: it is on the device, and a CPU batch given to it meets
                # its weights.
                moved = type(value) is Param and self.moves_a_model()
                return Module(dotted_name(expr) or "", moved)
            return None

        return module_of

    def moves_a_model(self) -> bool:
        """Whether this file moves a model to a device: `.cuda()` or `.to(...)` on a module it
        builds (`Net().to(device)`, `nn.Linear(...).cuda()`) or on a name that reads as one
        (`model`, `net`, `encoder`, `generator`, ...)."""
        if self._model_moved is None:
            self._model_moved = any(
                type(node) is cst.Call
                and type(node.func) is cst.Attribute
                and node.func.attr.value in ("cuda", "to")
                and (node.func.attr.value == "cuda" or bool(node.args))
                and self.reads_as_model(node.func.value)
                for node in iter_nodes(self.ctx.module)
            )
        return self._model_moved

    def reads_as_model(self, receiver: cst.BaseExpression) -> bool:
        if type(receiver) is cst.Call:
            qualname = self.ctx.qualname(receiver.func) or ""
            called = dotted_name(receiver.func) or ""
            return qualname.startswith("torch.nn.") or called[:1].isupper() or called.rpartition(".")[2][:1].isupper()
        name = (dotted_name(receiver) or "").rpartition(".")[2].lower()
        return any(word in name for word in MODEL_WORDS)

    def _returns(self, class_name: Optional[str]):
        """What a call of a function (or `self.` method) of this file returns, in the device domain."""
        model = self.model

        def returns(call: cst.Call):
            func = call.func
            info = None
            if type(func) is cst.Name:
                info = model.functions.get(("", func.value))
            elif class_name is not None and type(func) is cst.Attribute and type(func.value) is cst.Name:
                info = model.method(class_name, func.attr.value)
                if info is not None and (not info.is_method or not info.params or info.params[0] != func.value.value):
                    info = None if func.value.value != "self" else info
            if info is None or info.node.name.value == "__init__":
                return None
            owner = model.classes.get(info.owner) if info.owner else None
            flow = self.flow_of(info.node, owner.node if owner is not None else None)
            return joined_return(flow.returned) if flow is not None else None

        return returns

    def runs_only_when_exporting(self, function: cst.FunctionDef) -> bool:
        """A private module-level function that runs only while a model is traced for export:
        every call of it in this file is in the body of `if torchvision._is_tracing():` (or
        `torch.jit.is_tracing()`, `torch.onnx.is_in_onnx_export()`) or in a function that
        itself runs only then (torchvision's `_onnx_paste_mask_in_image`, called from the
        `@_script_if_tracing` loop its tracing branch calls). Such code follows the export,
        which runs on the CPU; its factories meet no device tensor."""
        key = id(function)
        if key not in self._exporting:
            self._exporting[key] = False  # a cycle of calls proves nothing
            sites = self._private_calls.get(function.name.value, ())
            self._exporting[key] = bool(sites) and all(
                guarded or (caller is not None and caller is not function and self.runs_only_when_exporting(caller))
                for caller, guarded in sites
            )
        return self._exporting[key]

    def imported_names_called_in_data_loading(self) -> list[str]:
        """The imported names that this file calls only while building batches (a dataset's
        `__getitem__`, a collate function, a helper nested in one) and names nowhere else but
        in those calls and its import: every tensor it hands them is a CPU tensor (detr's
        `masks_to_boxes(masks)` in `CocoPanoptic.__getitem__`)."""
        classes = {id(node): cls for node, cls in self._functions}
        names = []
        for name, sites in self._imported_sites.items():
            if not all(f is not None and (id(f) in self._preparing or runs_in_data_loading(f, classes.get(id(f)))) for f in sites):
                continue
            # Passed along (`fn=name`) or called as `module.name(...)` it may run elsewhere.
            if self._mention_count(name) == len(sites) + 1:
                names.append(name)
        return sorted(names)

    def _mention_count(self, name: str) -> int:
        """How often `name` appears as a Name node of this file (definitions, attributes,
        import aliases included); strings do not count."""
        if self._mentions is None:
            mentions: dict[str, int] = {}
            for node in iter_nodes(self.ctx.module):
                if type(node) is cst.Name:
                    mentions[node.value] = mentions.get(node.value, 0) + 1
            self._mentions = mentions
        return self._mentions.get(name, 0)

    def _named_in_strings(self, name: str) -> bool:
        return f"'{name}'" in self.ctx.text or f'"{name}"' in self.ctx.text

    def meets_only_a_list(self, meeting: Meeting) -> bool:
        """The factory's value exists only where the tensor parameter it meets is a list of
        tensors (torchlint.semantic.list_guards): it meets the list or its elements, not a
        device tensor."""
        body, name = meeting.body, meeting.other
        if type(body) is not cst.FunctionDef or not name.isidentifier() or self.home_of(meeting.cpu.origin, body) is not body:
            return False
        return made_for_list_form(body, meeting.cpu.origin, name)

    def class_of(self, function: cst.FunctionDef) -> Optional[cst.ClassDef]:
        """The class whose body defines `function`, if it is a method."""
        return next((c for node, c in self._functions if node is function), None)

    def is_unreferenced_method(self, function: cst.FunctionDef) -> bool:
        """A public method of a module-level class that defines no `forward` (a pipeline, a
        scheduler: not an `nn.Module`, whose methods such as `generate` run on its moved
        weights), that nothing in this file names (`self.name`, `obj.name`, a string for
        `getattr`). Whether another file names it is the project phase's question."""
        name = function.name.value
        if name.startswith("__"):
            return False
        cls = self.class_of(function)
        if cls is None or cls not in self.ctx.module.body:
            return False
        if any(type(s) is cst.FunctionDef and s.name.value == "forward" for s in cls.body.body):
            return False
        return self._mention_count(name) == 1 and not self._named_in_strings(name)

    def is_unreferenced(self, function: cst.FunctionDef) -> bool:
        """A module-level function that nothing in this file calls, passes, decorates with or
        exports: its name appears nowhere else in the code (nor as a string, as `__all__`
        lists names). Whether another file calls it is the project phase's question."""
        if function not in self.ctx.module.body:
            return False
        name = function.name.value
        return self._mention_count(name) == 1 and not self._named_in_strings(name)

    def callers_move_result(self, name: str) -> bool:
        """Every call of the module-level function `name` (or of the method, as `self.name`)
        in this file hands its result straight to a move: `name(...).cuda()`,
        `name(...).to(...)`, `x.to_device(name(...))`, or `y = name(...)` whose next use is
        `y = y.to(...)`."""
        if self.ctx.text.count(f"{name}(") < (1 if name.startswith("self.") else 2):
            return False  # only its own `def name(`: no caller in this file
        calls, moved = self._calls, self._moved
        return calls.get(name, 0) > 0 and moved.get(name, 0) == calls[name]

    # -- setting up ---------------------------------------------------------------------------
    def _method_class(self, node: cst.FunctionDef) -> Optional[cst.ClassDef]:
        ancestors = self.ctx.ancestors
        if len(ancestors) >= 2 and type(ancestors[-1]) is cst.IndentedBlock and type(ancestors[-2]) is cst.ClassDef:
            return ancestors[-2]
        return None

    def _qualname_in(self, function: Optional[cst.FunctionDef]):
        local = self.ctx.bindings_of(function) if function is not None else frozenset()

        def resolve(expr: cst.BaseExpression) -> Optional[str]:
            resolved = self.ctx.qualname(expr)
            dotted = dotted_name(expr) or ""
            if dotted.partition(".")[0] in local:
                return None
            if resolved is None and type(expr) is cst.Name and expr.value in CREATING_NAMES:
                return self.model.torch_star_name(expr.value)  # `from torch import *`
            return resolved

        return resolve

    def _forward_setup(self, node: cst.FunctionDef, cls: cst.ClassDef, scan: _BodyScan, qualname) -> FlowSetup:
        params = list(iter_params(node))
        self_name = params[0].name.value if params else None
        not_tensors = scan.int_like
        tensor_params = {}
        for param in params[1:]:
            name = param.name.value
            if name in not_tensors:
                continue
            annotation = annotation_text(self.ctx.module, param)
            if annotation is not None and not is_tensor_annotation(annotation):
                continue
            if param.default is not None and (is_literal(param.default) and not _is_none(param.default)):
                continue
            if param.default is not None and type(param.default) in (cst.Tuple, cst.List, cst.Dict):
                continue
            tensor_params[name] = name
        tensors, modules = self.parameter_attributes(cls)
        return FlowSetup(tensor_params, qualname, tensors, modules, self_name)

    def _helper_setup(self, node: cst.FunctionDef, scan: _BodyScan, qualname) -> FlowSetup:
        evident = scan.evident
        tensor_params = {}
        for param in iter_params(node):
            name = param.name.value
            annotation = annotation_text(self.ctx.module, param)
            if (annotation is not None and is_tensor_annotation(annotation)) or name in evident:
                tensor_params[name] = name
        tensor_params.pop("self", None)
        tensor_params.pop("cls", None)
        return FlowSetup(tensor_params, qualname)

    def parameter_attributes(self, cls: cst.ClassDef) -> tuple[frozenset, frozenset]:
        """Parameters/buffers and parameter-holding submodules that a class's methods assign."""
        cached = self._class_info.get(id(cls))
        if cached is not None:
            return cached
        collector = SelfAttributes(self.ctx, cls)
        result = (frozenset(collector.tensors), frozenset(collector.modules - collector.methods))
        self._class_info[id(cls)] = result
        return result


#: Calls that put their argument on a device (Lightning's `fabric.to_device`, accelerate's
#: `send_to_device`, a project's `move_to(...)`).
MOVING_FUNCTIONS = ("to_device", "send_to_device", "move_to", "move_to_device")


def numpy_of_tensor_params(function: cst.FunctionDef, params: set[str]) -> bool:
    """The function calls `.numpy()` on a value computed from its tensor parameters without
    moving it to the CPU first (`energy = torch.norm(spec, dim=1).numpy()`): `.numpy()` raises
    on a device tensor, so this code only ever runs on CPU tensors (audio or image
    preprocessing), and its CPU factories meet nothing on a device."""
    if not params:
        return False
    derived = set(params)
    assignments = [
        inner for inner in iter_nodes(function.body, skip=nested_scopes()) if type(inner) in (cst.Assign, cst.AugAssign, cst.AnnAssign)
    ]
    for _ in range(2):  # a loop may use a name before the statement that derives it
        for assign in assignments:
            value = assign.value
            if value is None or not _mentions(value, derived):
                continue
            targets = [t.target for t in assign.targets] if type(assign) is cst.Assign else [assign.target]
            for target in targets:
                derived.update(n.value for n in iter_nodes(target) if type(n) is cst.Name)
    for inner in iter_nodes(function.body, skip=nested_scopes()):
        if type(inner) is not cst.Call or inner.args or type(inner.func) is not cst.Attribute or inner.func.attr.value != "numpy":
            continue
        receiver = inner.func.value
        if not _moves_off_device(receiver) and _mentions(receiver, derived):
            return True
    return False


def _mentions(expr: cst.CSTNode, names: set[str]) -> bool:
    return any(type(n) is cst.Name and n.value in names for n in iter_nodes(expr))


def _moves_off_device(expr: cst.BaseExpression) -> bool:
    """`x.cpu()`, `x.detach().cpu()`, `x.to("cpu")` somewhere in a method chain."""
    while type(expr) is cst.Call and type(expr.func) is cst.Attribute:
        method = expr.func.attr.value
        if method == "cpu" or (method == "to" and any(type(a.value) is cst.SimpleString and "cpu" in a.value.value for a in expr.args)):
            return True
        expr = expr.func.value
    return False


def _moved_call(node: cst.Call) -> Optional[str]:
    """`name` when `node` moves the result of `name(...)` to a device right away."""
    func = node.func
    inner = None
    if type(func) is cst.Attribute and func.attr.value in ("cuda", "to") and type(func.value) is cst.Call:
        inner = func.value
    elif (func.attr.value if type(func) is cst.Attribute else getattr(func, "value", "")) in MOVING_FUNCTIONS:
        first = next((a.value for a in node.args if a.keyword is None and not a.star), None)
        inner = first if type(first) is cst.Call else None
    return _called(inner.func) if inner is not None else None


def _on_self(func: cst.BaseExpression) -> bool:
    """`self.name`: a method of the class the call is written in."""
    return type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self"


def _called(func: cst.BaseExpression) -> Optional[str]:
    """The key `_calls` counts a call under: `name` for `name(...)`, `self.name` for `self.name(...)`."""
    if type(func) is cst.Name:
        return func.value
    if _on_self(func):
        return f"self.{func.attr.value}"
    return None


def _names_a_destination(call: cst.Call) -> bool:
    """`.to(device=...)`, `.to(device)`, `.to(other)`: not `.to(torch.float16)` / `.to(dtype=...)`."""
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == "device":
                return True
            continue
        if not (dotted_name(arg.value) or "").startswith("torch."):
            return True
    return False


#: How many statements after `y = f(...)` the move `y = y.to(...)` may come.
_MOVE_LOOKAHEAD = 6


def _next_use_moves(ancestors: list, assign: cst.Assign, name: str) -> bool:
    """The first of the next few statements of the block that mentions `name` is
    `name = name.to(...)` or `name = name.cuda()`."""
    if len(ancestors) < 2 or type(ancestors[-1]) is not cst.SimpleStatementLine or len(ancestors[-1].body) != 1:
        return False
    line, block = ancestors[-1], ancestors[-2]
    statements = list(block.body) if type(block) in (cst.IndentedBlock, cst.Module) else []
    start = next((i for i, s in enumerate(statements) if s is line), len(statements)) + 1
    # A move "right away" is a few statements later; looking further would cost a walk of
    # the rest of the block for every assignment of a call.
    for statement in statements[start : start + _MOVE_LOOKAHEAD]:
        if not _mentions(statement, {name}):
            continue
        if type(statement) is not cst.SimpleStatementLine or len(statement.body) != 1 or type(statement.body[0]) is not cst.Assign:
            return False
        moved = statement.body[0]
        value = moved.value
        return (
            len(moved.targets) == 1
            and type(moved.targets[0].target) is cst.Name
            and moved.targets[0].target.value == name
            and type(value) is cst.Call
            and type(value.func) is cst.Attribute
            and type(value.func.value) is cst.Name
            and value.func.value.value == name
            and (value.func.attr.value == "cuda" or (value.func.attr.value == "to" and _names_a_destination(value)))
        )
    return False


def _is_none(node: cst.BaseExpression) -> bool:
    return type(node) is cst.Name and node.value == "None"


#: Checks that are true only while a model is traced for export (ONNX or TorchScript tracing).
EXPORT_CHECKS = frozenset({"_is_tracing", "is_tracing", "is_in_onnx_export"})


def _under_export_check(ancestors: list) -> bool:
    """Whether the node being visited is in the body (not the `else`) of an `if` whose test is
    an export check, alone or joined by `and`."""
    for index, ancestor in enumerate(ancestors[:-1]):
        if type(ancestor) is cst.If and ancestors[index + 1] is ancestor.body and _is_export_check(ancestor.test):
            return True
    return False


def _is_export_check(test: cst.BaseExpression) -> bool:
    if type(test) is cst.BooleanOperation:
        return type(test.operator) is cst.And and (_is_export_check(test.left) or _is_export_check(test.right))
    if type(test) is not cst.Call:
        return False
    func = test.func
    name = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
    return name in EXPORT_CHECKS


def runs_in_data_loading(node: cst.FunctionDef, cls: Optional[cst.ClassDef]) -> bool:
    """Datasets, samplers, collate and batch-building functions, and preprocessing classes
    build their tensors on the CPU by design."""
    name = node.name.value
    if name in DATA_LOADING_METHODS or "collate" in name.lower() or name.startswith(BATCH_BUILDERS):
        return True
    if cls is None:
        return False
    if cls.name.value.endswith(DATA_LOADING_BASES) or any(word in cls.name.value for word in PREPARING_CLASS_WORDS):
        return True
    return any((dotted_name(base.value) or "").endswith(DATA_LOADING_BASES) for base in cls.bases)


def is_module_forward(ctx: FileContext, node: cst.FunctionDef, cls: cst.ClassDef) -> bool:
    """`forward` of a class with bases; not autograd.Function's static `forward(ctx, ...)`."""
    if node.name.value != "forward" or not cls.bases:
        return False
    for decorator in node.decorators:
        if dotted_name(decorator.decorator) in ("staticmethod", "classmethod"):
            return False
    for base in cls.bases:
        qualname = ctx.qualname(base.value) or dotted_name(base.value) or ""
        if qualname.endswith("Function"):
            return False
    params = list(iter_params(node))
    return bool(params) and params[0].name.value != "ctx"


@dataclass
class _BodyScan:
    """What one pass over a function body tells before the flow runs."""

    makes_tensors: bool = False  # calls a factory at all
    evident: set = field(default_factory=set)  # names whose .shape/.size()/.device/... is read
    int_like: set = field(default_factory=set)  # names passed to range(), int() or as a size


def _scan_call(node: cst.Call, qualname, scan: _BodyScan) -> None:
    func = node.func
    if type(func) is cst.Attribute and type(func.value) is cst.Name and func.attr.value in TENSOR_EVIDENCE_METHODS:
        scan.evident.add(func.value.value)
    short = func.value if type(func) is cst.Name else func.attr.value if type(func) is cst.Attribute else None
    if short is None:
        return
    consumer = type(func) is cst.Name and short in INT_CONSUMERS
    if short in FACTORY_NAMES and qualname(func) in FACTORIES:
        scan.makes_tensors = True
        consumer = short not in ("tensor", "as_tensor")
    if consumer:
        for arg in node.args:
            if type(arg.value) is cst.Name:
                scan.int_like.add(arg.value.value)
            elif type(arg.value) in (cst.Tuple, cst.List):
                scan.int_like.update(e.value.value for e in arg.value.elements if type(e.value) is cst.Name)
