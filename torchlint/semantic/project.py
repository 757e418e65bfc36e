"""The semantic model across files: per-file summaries as JSON facts, joined by the project
phase.

Each file the model is built for exports (``export``) what other files may need, resolved as
far as the file alone allows:

* ``classes``: what calling an instance of each module-level class returns (its `forward`,
  or an overridden `__call__`), per tuple element;
* ``functions``: what each module-level function returns;
* ``globals``: what each module-level name holds (an `nn.Sequential(..., nn.Softmax())`);
* ``calls``: calls of names imported from other files, with the values of their arguments,
  so a parameter of a function in one file learns what another file passes it.

A value that still depends on another file is an ``ext`` reference (an imported name, the
output of an imported model, a parameter of this file's function that only other files call);
``ProjectModel.resolve`` follows such references through the other files' summaries. Values
are JSON: lists of small objects (see ``_encode``), cached with the file like every fact.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Iterator

from torchlint.semantic.values import (
    LOGPROB,
    PROB,
    SIGMOID,
    ClassObj,
    ClassRef,
    External,
    FunctionObj,
    Instance,
    Layer,
    LossModule,
    NNModule,
    Origin,
    Sequence,
    Tensor,
)

if TYPE_CHECKING:
    from torchlint.semantic.model import SemanticModel
    from torchlint.static.context import ProjectContext

FACTS_KEY = "semantic"
#: Tensor kinds the project phase follows across files (the loss-input rules' questions).
CROSS_FILE_KINDS = frozenset({PROB, LOGPROB, SIGMOID})
#: Kinds of values worth telling other files about (anything else is "unknown" there anyway).
_INTERESTING = ("t", "layer", "loss", "class", "instance", "function", "ext", "seq")
_MAX_DEPTH = 30
#: Concrete values the encoder never writes (see Encoder.value).
_STAY_HOME = (NNModule,)


# -- encoding one file's values ------------------------------------------------------------------
class Encoder:
    def __init__(self, model: SemanticModel, path: str) -> None:
        self.model = model
        self.path = path

    def values(self, values: frozenset | set, depth: int = 0) -> list[dict[str, Any]]:
        # Values that never cross files are dropped before sorting: `repr` of a value prints
        # its origin's syntax tree, and most tensors in a forward (layer outputs, saved ops)
        # stay home.
        kept = [v for v in values if not (type(v) in _STAY_HOME or (type(v) in (Tensor, Layer) and v.kind not in CROSS_FILE_KINDS))]
        if len(kept) > 1:  # (most sets hold one value: no `repr` to write)
            kept.sort(key=repr)
        return [e for value in kept if (e := self.value(value, depth)) is not None]

    def value(self, value: Any, depth: int = 0) -> dict[str, Any] | None:
        kind = type(value)
        # Only what other files' rules ask about crosses files; locating an origin costs a
        # code generation of its statement, so the common relu/tanh outputs stay home.
        if kind is Tensor:
            return {"t": value.kind, **self.origin(value.origin)} if value.kind in CROSS_FILE_KINDS else None
        if kind is Layer:
            return {"layer": value.kind, **self.origin(value.origin)} if value.kind in CROSS_FILE_KINDS else None
        if kind is LossModule:
            return {"loss": value.kind}
        if kind is ClassObj:
            return {"class": value.ref.name, "path": self.path} if value.ref.local else {"ext": {"global": _ref(value.ref)}, "path": self.path}
        if kind is Instance:
            return {"instance": value.ref.name, "path": self.path} if value.ref.local else {"ext": {"instance": _ref(value.ref)}, "path": self.path}
        if kind is FunctionObj and not value.owner:
            return {"function": value.name, "path": self.path}
        if kind is External:
            return {"ext": _external(value.ref), "path": self.path}
        if kind is Sequence and depth < 3:
            items = [self.values(self.model.resolve(item), depth + 1) for item in value.items]
            if not any(items):
                return None
            return {"seq": value.kind, "items": items}
        return None

    def origin(self, origin: Origin) -> dict[str, Any]:
        line = origin.line or (self.model.ctx.position(origin.node)[0] if origin.node is not None else 0)
        return {"text": origin.text, "path": origin.path or self.path, "line": line, "via": origin.via}


def _ref(ref: ClassRef) -> dict[str, Any]:
    return {"qualname": ref.qualname, "level": ref.level, "target": ref.target, "name": ref.name, "star": [list(s) for s in ref.star]}


def _external(ref: Any) -> Any:
    """A model `External.ref` (nested tuples) as JSON."""
    if isinstance(ref, ClassRef):
        return _ref(ref)
    head = ref[0]
    if head == "forward" and len(ref) > 2:
        return {head: _ref(ref[1]), "flags": [list(flag) for flag in ref[2]]}
    if head in ("global", "instance", "forward"):
        return {head: _ref(ref[1])}
    if head == "call":
        return {"call": _external(ref[1])}
    if head == "item":
        return {"item": [_external(ref[1]), ref[2]]}
    if head == "attr":
        return {"attr": [_external(ref[1]), ref[2]]}
    if head == "param":
        return {"param": list(ref[1:])}
    return {"unknown": str(head)}


def export(model: SemanticModel, path: str) -> dict[str, Any]:
    """This file's summary for other files: only what says something."""
    encoder = Encoder(model, path)
    facts: dict[str, Any] = {}
    classes = {}
    choices = {}
    for name in sorted(model.classes):
        output = encoder.values(model.forward_output(name))
        if output:
            classes[name] = output
            choice = _forward_choice(model, encoder, name)
            if choice:
                choices[name] = choice
    functions = {}
    for (owner, name), info in sorted(model.functions.items()):
        if not owner:
            returns = encoder.values(model._returns(info, 0))
            if returns:
                functions[name] = returns
    globals_ = {}
    for name in sorted(model.module_names()):
        values = encoder.values(model.resolve_global(name))
        if any(_interesting(v) for v in values):
            globals_[name] = values
    calls = []
    for name, sites in sorted(model.calls_by_name().items()):
        for site in sites:
            # Calls of names imported from other files (functions, classes): what a
            # parameter of theirs receives from here.
            callees = [c for c in model.resolve(site.callee) if type(c) is External and c.ref[0] in ("global", "instance")]
            if not callees or site.has_star:
                continue
            args = [encoder.values(model.resolve(a)) for a in site.positional]
            keywords = {k: encoder.values(model.resolve(v)) for k, v in site.keywords.items()}
            if not any(args) and not any(keywords.values()):
                continue
            for callee in callees:
                calls.append({"callee": _external(callee.ref), "args": args, "keywords": keywords})
    for name, receiver, site in model.method_calls():
        # `trainer.train(model)` where `trainer` is an instance of an imported class.
        owners = [r for r in model.resolve(receiver) if type(r) is Instance and not r.ref.local]
        if not owners:
            continue
        args = [encoder.values(model.resolve(a)) for a in site.positional]
        keywords = {k: encoder.values(model.resolve(v)) for k, v in site.keywords.items()}
        if not any(args) and not any(keywords.values()):
            continue
        for owner in owners:
            calls.append({"callee": {"method": [_ref(owner.ref), name]}, "args": args, "keywords": keywords})
    for key, value in (("classes", classes), ("choices", choices), ("functions", functions), ("globals", globals_), ("calls", calls)):
        if value:
            facts[key] = value
    if model.star_imports:
        facts["stars"] = [list(s) for s in model.star_imports]
    return facts


def _forward_choice(model: SemanticModel, encoder: Encoder, name: str) -> dict[str, Any] | None:
    """For a class whose `forward` returns different things under `if flag:` on its
    parameters (`forward(x, log=False)`): each return with the flags it is made under, so a
    caller in another file that passes `log=True` gets that branch only."""
    for info in model._class_chain(name):
        method = info.methods.get("__call__") or info.methods.get("forward")
        if method is None:
            continue
        if not any(method.return_conditions):
            return None
        returns = [
            {"when": [list(c) for c in conditions], "values": encoder.values(model.resolve(value))}
            for value, conditions in zip(method.returns, method.return_conditions)
        ]
        params = method.params[1:] if method.is_method else method.params
        return {"params": list(params), "defaults": method.flag_defaults, "returns": returns}
    return None


def _interesting(value: dict[str, Any]) -> bool:
    return any(key in value for key in _INTERESTING)


# -- the project phase -------------------------------------------------------------------------
def _chosen_output(choice: dict[str, Any], flags: list) -> list[dict[str, Any]]:
    """The returns of a `forward` whose flags a call does not contradict (see `_forward_choice`)."""
    from torchlint.semantic.model import chosen_flags

    chosen = chosen_flags(choice["params"], choice["defaults"], flags)
    output: list[dict[str, Any]] = []
    for branch in choice["returns"]:
        if all(chosen.get(param, wanted) == wanted for param, wanted in branch["when"]):
            output.extend(branch["values"])
    return output


class ProjectModel:
    """Resolves the JSON values of one file against every file's summary."""

    def __init__(self, project: ProjectContext) -> None:
        self.project = project
        self.summaries = {path: facts.get(FACTS_KEY, {}) for path, facts in project.facts.items()}
        #: calls of imported names, by the name called: a parameter's callers are looked up,
        #: not searched for (torch's own sources hold thousands of such calls).
        self._calls_by_name: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for caller, summary in self.summaries.items():
            for call in summary.get("calls", ()):
                target = call["callee"].get("global") or call["callee"].get("instance")
                if target is not None:
                    self._calls_by_name.setdefault(_ref_name(target), []).append((caller, call))
                elif "method" in call["callee"]:
                    # keyed apart from functions: `.train` is a method of some class
                    self._calls_by_name.setdefault("." + call["callee"]["method"][1], []).append((caller, call))
        self._defined: dict[tuple, list[tuple[str, str]]] = {}

    def resolve(self, values: list[dict[str, Any]], depth: int = 0) -> list[dict[str, Any]]:
        """Concrete values (tensors, layers, loss modules, classes, instances, functions,
        sequences) that `values` may be, following references into other files."""
        out: list[dict[str, Any]] = []
        if depth > _MAX_DEPTH:
            return out
        for value in values:
            if "ext" in value:
                out.extend(self._external(value["ext"], value["path"], depth + 1))
            else:
                out.append(value)
        return out

    def _external(self, ref: dict[str, Any], path: str, depth: int) -> list[dict[str, Any]]:
        if "global" in ref:
            return self._global(ref["global"], path, depth)
        if "instance" in ref:
            return [{"instance": c["class"], "path": c["path"]} for c in self._global(ref["instance"], path, depth) if "class" in c]
        if "forward" in ref:
            flags = ref.get("flags", ())
            return self.call([{"instance": c["class"], "path": c["path"], "flags": flags} for c in self._global(ref["forward"], path, depth) if "class" in c], depth)
        if "call" in ref:
            return self.call(self._external(ref["call"], path, depth + 1), depth)
        if "item" in ref:
            inner, index = ref["item"]
            return self.item(self._external(inner, path, depth + 1), index, depth)
        if "param" in ref:
            return self._param(path, *ref["param"], depth=depth)
        return []

    def call(self, callees: list[dict[str, Any]], depth: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for callee in callees:
            if "layer" in callee and callee["layer"] != "identity":
                out.append({"t": callee["layer"], "text": callee["text"], "path": callee["path"], "line": callee["line"], "via": ""})
            elif "class" in callee:
                out.append({"instance": callee["class"], "path": callee["path"]})
            elif "instance" in callee:
                summary = self.summaries.get(callee["path"], {})
                output = summary.get("classes", {}).get(callee["instance"], [])
                choice = summary.get("choices", {}).get(callee["instance"])
                if choice is not None and callee.get("flags"):
                    output = _chosen_output(choice, callee["flags"])
                out.extend(_via(v, callee["instance"]) for v in self.resolve(output, depth + 1))
            elif "function" in callee:
                output = self.summaries.get(callee["path"], {}).get("functions", {}).get(callee["function"], [])
                out.extend(self.resolve(output, depth + 1))
            elif "seq" in callee and callee["seq"] == "sequential" and callee["items"]:
                out.extend(self.call(self.resolve(callee["items"][-1], depth + 1), depth + 1))
        return out

    def item(self, containers: list[dict[str, Any]], index: Any, depth: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for container in containers:
            if "seq" in container:
                items = container["items"]
                if isinstance(index, int) and -len(items) <= index < len(items):
                    out.extend(self.resolve(items[index], depth + 1))
                else:
                    for item in items:
                        out.extend(self.resolve(item, depth + 1))
            elif "t" in container:
                out.append(container)
        return out

    def _global(self, ref: dict[str, Any], importer: str, depth: int) -> list[dict[str, Any]]:
        """What an imported name is in the file that defines it."""
        for path, name in self._defining(ref, importer):
            summary = self.summaries.get(path, {})
            if name in summary.get("globals", {}):
                return self.resolve(summary["globals"][name], depth + 1)
            if name in summary.get("classes", {}):
                return [{"class": name, "path": path}]
            if name in summary.get("functions", {}):
                return [{"function": name, "path": path}]
        return []

    def _defining(self, ref: dict[str, Any], importer: str) -> list[tuple[str, str]]:
        """(file, name) pairs the reference may mean, nearest first (memoised)."""
        key = (importer, ref.get("qualname"), ref.get("target"), ref.get("level"), ref.get("name"), str(ref.get("star")))
        found = self._defined.get(key)
        if found is None:
            found = self._defined[key] = list(self._find_defining(ref, importer))
        return found

    def _find_defining(self, ref: dict[str, Any], importer: str) -> Iterator[tuple[str, str]]:
        if ref.get("star"):
            for level, module in ref["star"]:
                path = defining_file(self.project, importer, module, level)
                if path is not None:
                    yield path, ref["name"]
                    # A star import re-exported through another star import.
                    for inner_level, inner_module in self.summaries.get(path, {}).get("stars", []):
                        inner = defining_file(self.project, path, inner_module, inner_level)
                        if inner is not None:
                            yield inner, ref["name"]
            return
        dotted = ref.get("qualname") or ref.get("target") or ""
        module, _, name = dotted.rpartition(".")
        path = defining_file(self.project, importer, module, ref.get("level", 0))
        if path is not None:
            yield path, name

    def _param(self, path: str, owner: str, function: str, index: int, name: str, *, depth: int) -> list[dict[str, Any]]:
        """What other files pass for a parameter of `function` of `path`."""
        out: list[dict[str, Any]] = []
        method = bool(owner) and function != "__init__"
        for caller, call in self._calls_by_name.get("." + function if method else owner or function, ()):
            callee = call["callee"]
            target = callee["method"][0] if method else callee.get("global") or callee.get("instance")
            if not any(p == path and n == (owner or function) for p, n in self._defining(target, caller)):
                continue
            position = index - (1 if owner else 0)
            if name in call["keywords"]:
                out.extend(self.resolve(call["keywords"][name], depth + 1))
            elif 0 <= position < len(call["args"]):
                out.extend(self.resolve(call["args"][position], depth + 1))
        return out


def _ref_name(ref: dict[str, Any]) -> str:
    """The name a reference imports: `Net` of `models.Net`, or a star import's name."""
    if ref.get("star"):
        return ref.get("name", "")
    return (ref.get("qualname") or ref.get("target") or "").rpartition(".")[2]


def _via(value: dict[str, Any], cls: str) -> dict[str, Any]:
    if "t" in value and not value.get("via"):
        return {**value, "via": cls}
    return value


def defining_file(project: ProjectContext, importer: str, module: str, level: int) -> str | None:
    """The checked file that `module` means in `importer`. A top-level name (`from models
    import Net`) is only trusted next to the importing script: another folder's `models.py`
    may exist without being in this run's facts, so a unique match elsewhere proves nothing.
    A script inside a package folder finds its neighbour by file name."""
    if not module and not level:
        return None
    found = project.resolve_module(importer, module, level)
    if level or "." in module:
        return found
    folder = str(PurePosixPath(importer.replace("\\", "/")).parent)
    if found is not None and str(PurePosixPath(found.replace("\\", "/")).parent) == folder:
        return found
    neighbours = [p for p in project.module_names if str(PurePosixPath(p.replace("\\", "/")).parent) == folder and PurePosixPath(p).stem == module]
    return neighbours[0] if len(neighbours) == 1 else None


__all__ = ["Encoder", "ProjectModel", "export", "defining_file", "FACTS_KEY"]
