"""The order a file's checkpoint calls run in: which paths each function saves, and which
functions the script's main sequence calls first, so that a load can ask whether this
process saved its file just before (`CheckpointFlow.saved_before`). An analysis: the engine
visits it once per file, for every rule that names it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from torchlint.analysis import Analysis
from torchlint.semantic.checkpoint_formats import payload_format, positional_params
from torchlint.semantic.checkpoints import (
    LOAD_FUNCTIONS,
    SAVE_FUNCTIONS,
    CheckpointNames,
    argument,
    cpu_only_writer,
    cuda_only_script,
    file_name_pattern,
    holds_no_tensors,
    is_accelerator_save,
    path_text,
    saved_model,
)


@dataclass
class ScriptOrder:
    """Saves and loads of one file, and the order its main sequence calls functions in."""

    #: function name ("" = module level) -> path texts it saves, with the order of each save
    saves: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    #: function name -> names of this file's functions it calls
    calls: dict[str, set[str]] = field(default_factory=dict)
    #: (function name, order) of each call in the main sequence, in order
    main_calls: list[tuple[str, int]] = field(default_factory=list)
    #: function name -> (callee name, order) of each call it makes to a function by name
    call_sites: dict[str, list[tuple[str, int]]] = field(default_factory=dict)

    def saved_before(self, function: str, path_text: str, order: int) -> bool:
        """Is `path_text` saved, in this process, before a load at `order` in `function`?"""
        if any(text == path_text and at < order for text, at in self.saves.get(function, ())):
            return True
        # The main sequence calls a saver before the function that loads (or, for a load at
        # module level, before the load itself).
        first_load_call = order if not function else min((at for name, at in self.main_calls if name == function), default=None)
        if first_load_call is not None and any(
            at < first_load_call and path_text in self._saved_by(name, set()) for name, at in self.main_calls
        ):
            return True
        return bool(function) and self._caller_saved_first(function, path_text)

    def _caller_saved_first(self, function: str, path_text: str) -> bool:
        """A function that saves `path_text` (itself, or through a function it called
        earlier) and then calls `function`: `train()` saves the best model and ends with
        `test()`, which loads it."""
        for caller, sites in self.call_sites.items():
            if caller == function:
                continue
            for callee, at in sites:
                if callee != function:
                    continue
                if any(text == path_text and saved < at for text, saved in self.saves.get(caller, ())):
                    return True
                if any(earlier < at and path_text in self._saved_by(name, {caller}) for name, earlier in sites):
                    return True
        return False

    def _saved_by(self, function: str, seen: set[str]) -> set[str]:
        if function in seen:
            return set()
        seen.add(function)
        found = {text for text, _ in self.saves.get(function, ())}
        for callee in self.calls.get(function, ()):
            found |= self._saved_by(callee, seen)
        return found


class CheckpointFlow(Analysis):
    """The saves of one file and the calls between its functions, in the order they run
    (`order` counts every call visited), and a record of each save for the project phase."""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.order = ScriptOrder()
        self.names = CheckpointNames(ctx)
        #: Calls visited so far: the position of the call being visited, in source order.
        self.calls_seen = 0
        #: One record per save whose path and payload are spelled (the "save" file fact).
        self.saves: list[dict] = []
        #: The "save_helper", "save_forward" and "format_call" facts (`checkpoint_formats`).
        self.format_facts: dict[str, list[dict]] = {}
        self._cuda_only: bool | None = None

    def visit_Call(self, node: cst.Call) -> None:
        self.calls_seen += 1
        qualname = self.names.qualname(node.func)
        if qualname in SAVE_FUNCTIONS or is_accelerator_save(node):
            payload = argument(node, "obj", 0)
            if payload is not None and not payload.star:
                self._note_parameter_saved(payload.value, "save_helper", {})
            if not self._note_save(node):
                self._note_unread_writer()
        elif qualname not in LOAD_FUNCTIONS:
            if _other_writer(node, qualname):
                self._note_unread_writer()
                self._note_helper_call(node)
            self._note_call(node)

    def saved_before(self, function: str, path_text: str, order: int) -> bool:
        """Is `path_text` saved, in this process, before a load at `order` in `function`?"""
        return self.order.saved_before(function, path_text, order)

    def in_cuda_only_script(self) -> bool:
        """Is this file a script that runs on one CUDA device or not at all (`cuda_only_script`)?"""
        if self._cuda_only is None:
            self._cuda_only = cuda_only_script(self.ctx)
        return self._cuda_only

    def function_name(self) -> str:
        """The name of the function being visited ("" at module level)."""
        function = self.ctx.enclosing_function()
        return function.name.value if function is not None else ""

    def _note_save(self, node: cst.Call) -> bool:
        """Record a save; False when its path or payload cannot be read."""
        written = path_text(self.ctx.module, node, "f", 1)
        if written is None:
            return False
        self.order.saves.setdefault(self.function_name(), []).append((written, self.calls_seen))
        payload = argument(node, "obj", 0)
        if payload is not None and not payload.star:
            tensors = not holds_no_tensors(self.ctx.module, payload.value, self.ctx.enclosing_function())
            model, moved_to_cpu = saved_model(self.ctx, payload.value)
            cpu = tensors and (moved_to_cpu or cpu_only_writer(self.ctx, payload.value))
            name = file_name_pattern(self.ctx, node, "f", 1)
            keys, moved_by_wrapper = payload_format(self.ctx, payload.value)
            self.saves.append(
                {"path": written, "tensors": tensors, "cpu": cpu or (tensors and moved_by_wrapper), "name": name, "model": model, "cuda_only": self.in_cuda_only_script(), "keys": keys, "moved": tensors and (moved_to_cpu or moved_by_wrapper)},
            )
            return True
        return False

    def _note_unread_writer(self) -> None:
        """A writer whose file and payload this analysis cannot read (`torch.save(*args)`,
        `fabric.save(path, state)`, a project's `save_checkpoint(...)`): it may write tensors
        from any device. No load matches it (it has no path, name or model); it only keeps
        `writes_only_cpu_checkpoints` from claiming the project's every writer is known."""
        self.saves.append({"path": None, "tensors": True, "cpu": False, "name": None, "model": None, "cuda_only": False})

    def _note_parameter_saved(self, value: cst.BaseExpression, kind: str, fact: dict) -> None:
        """A save (or a call of a saving helper) of a parameter of the enclosing function:
        that function saves what its callers pass at that position."""
        function = self.ctx.enclosing_function()
        if function is None or type(value) is not cst.Name:
            return
        params = positional_params(function)
        if value.value in params:
            record = {"function": function.name.value, "param": params.index(value.value), **fact}
            self.format_facts.setdefault(kind, []).append(record)

    def _note_helper_call(self, node: cst.Call) -> None:
        """A call of a saving helper (`torch_persistent_save(state, filename)`): a payload
        whose keys are known is a "format_call"; a parameter handed on is a "save_forward"."""
        callee = node.func.attr.value if type(node.func) is cst.Attribute else node.func.value
        positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
        for index, arg in enumerate(positional):
            self._note_parameter_saved(arg.value, "save_forward", {"callee": callee, "arg": index})
            keys, moved_by_wrapper = payload_format(self.ctx, arg.value)
            if keys is not None:
                cpu = moved_by_wrapper or cpu_only_writer(self.ctx, arg.value)
                self.format_facts.setdefault("format_call", []).append(
                    {"callee": callee, "arg": index, "keys": keys, "tensors": True, "cpu": cpu, "moved": moved_by_wrapper},
                )

    def _note_call(self, node: cst.Call) -> None:
        if type(node.func) is not cst.Name:
            return
        caller = self.function_name()
        self.order.calls.setdefault(caller, set()).add(node.func.value)
        self.order.call_sites.setdefault(caller, []).append((node.func.value, self.calls_seen))
        if caller in ("", "main"):
            self.order.main_calls.append((node.func.value, self.calls_seen))


def _other_writer(node: cst.Call, qualname: str | None) -> bool:
    """A call that may write a checkpoint by other means than `torch.save`: a callee named
    `save`, `save_*` or `*_save` (Lightning's `fabric.save`, `trainer.save_checkpoint`, a
    project's own `save_model(...)`) with an argument, numpy's savers aside."""
    if not node.args or (qualname or "").startswith(("numpy.", "np.")):
        return False
    func = node.func
    name = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else ""
    return name == "save" or name.startswith("save_") or name.endswith("_save")
