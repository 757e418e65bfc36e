"""Where a script's checkpoints come from: which saves run before a load in one process, and
which checkpoints of the project hold no tensors. Read by TL301.

A `torch.load` without `map_location` is only a portability bug when the file may hold
tensors saved on an accelerator by another process. It is not one when:

* the same process saved that file just before: a save and a load of the same path (the
  same expression text) where the save runs first, in one function, at module level, or in
  a function the script's main sequence (module level, `if __name__ == "__main__":`, and a
  `main()` called from there) calls before the function that loads;
* the project only ever saves that path with a payload that holds no tensors (a numpy
  array, a list or dict of numbers) — recorded as a file fact and joined across files.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ._calls import argument

SAVE_FUNCTIONS = frozenset({"torch.save", "torch.serialization.save"})
#: Calls and attributes whose result holds no tensors.
_NON_TENSOR_CALLS = ("np.", "numpy.", "json.", "list(", "dict(", "int(", "float(", "str(")


@dataclass
class ScriptOrder:
    """Saves and loads of one file, and the order its main sequence calls functions in."""

    #: function name ("" = module level) -> path texts it saves, with the order of each save
    saves: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    #: function name -> names of this file's functions it calls
    calls: dict[str, set[str]] = field(default_factory=dict)
    #: (function name, order) of each call in the main sequence, in order
    main_calls: list[tuple[str, int]] = field(default_factory=list)

    def saved_before(self, function: str, path_text: str, order: int) -> bool:
        """Is `path_text` saved, in this process, before a load at `order` in `function`?"""
        if any(text == path_text and at < order for text, at in self.saves.get(function, ())):
            return True
        # The main sequence calls a saver before the function that loads (or, for a load at
        # module level, before the load itself).
        first_load_call = order if not function else min((at for name, at in self.main_calls if name == function), default=None)
        if first_load_call is None:
            return False
        return any(at < first_load_call and path_text in self._saved_by(name, set()) for name, at in self.main_calls)

    def _saved_by(self, function: str, seen: set[str]) -> set[str]:
        if function in seen:
            return set()
        seen.add(function)
        found = {text for text, _ in self.saves.get(function, ())}
        for callee in self.calls.get(function, ()):
            found |= self._saved_by(callee, seen)
        return found


def path_text(module: cst.Module, call: cst.Call, name: str, position: int) -> str | None:
    arg = argument(call, name, position)
    if arg is None or arg.star:
        return None
    return module.code_for_node(arg.value).strip()


def holds_no_tensors(module: cst.Module, payload: cst.BaseExpression) -> bool:
    """A payload that is visibly not tensors: a numpy array, numbers, strings, or a list or
    dict of those."""
    if isinstance(payload, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(payload, (cst.List, cst.Tuple)):
        return all(holds_no_tensors(module, e.value) for e in payload.elements if isinstance(e, cst.Element))
    if isinstance(payload, cst.Dict):
        return all(holds_no_tensors(module, e.value) for e in payload.elements if isinstance(e, cst.DictElement))
    if isinstance(payload, cst.Call):
        text = module.code_for_node(payload.func)
        if text.endswith(".numpy") or text.endswith(".tolist") or text.endswith(".item"):
            return True
        return (text + "(").startswith(_NON_TENSOR_CALLS)
    return False


def is_main_guard(node: cst.If) -> bool:
    """`if __name__ == "__main__":`"""
    test = node.test
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    sides = [test.left, test.comparisons[0].comparator]
    names = [s.value for s in sides if isinstance(s, cst.Name)]
    strings = [s.evaluated_value for s in sides if isinstance(s, cst.SimpleString)]
    return names == ["__name__"] and strings == ["__main__"]


_ACCELERATOR_FLAGS = frozenset({"cuda", "use_cuda", "use_gpu", "on_gpu", "is_cuda", "has_cuda"})


def availability_guarded(ancestors: list[cst.CSTNode]) -> bool:
    """Inside the accelerator arm of `if torch.cuda.is_available(): ... else: ...` (the else
    arm loads for the CPU), or of a `use_cuda` / `args.cuda` flag with an else."""
    for index, node in enumerate(ancestors[:-1]):
        if type(node) is cst.If and node.orelse is not None and ancestors[index + 1] is node.body and _accelerator_test(node.test):
            return True
    return False


def _accelerator_test(test: cst.BaseExpression) -> bool:
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Attribute):
        return test.func.attr.value == "is_available"
    if isinstance(test, cst.Attribute):
        return test.attr.value in _ACCELERATOR_FLAGS
    if isinstance(test, cst.Name):
        return test.value in _ACCELERATOR_FLAGS
    return False
