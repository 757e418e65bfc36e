from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.fix import UNSAFE, NodeFix
from torchlint.rule import Bad, Good, Rule
from torchlint.semantic.program_facts import is_test_path
from torchlint.semantic.checkpoints import CheckpointNames, from_the_package, saved_here_by_this_code

from ._torchfix_helpers import has_double_star, in_compat_fallback, keyword_arg, parse_version, positional_args, target_torch, with_keyword

if TYPE_CHECKING:
    from torchlint.static.context import FileContext

LOAD_FUNCTIONS = frozenset({"torch.load", "torch.serialization.load"})


class LoadWithoutWeightsOnly(Rule):
    """
    ## What it does
    Flags `torch.load(...)` calls that do not pass `weights_only` in code that runs under
    torch 1.13–2.5 (see below for how the version is found): from 2.6 `weights_only=True` is
    the default, before 1.13 the parameter does not exist. A call that forwards `**kwargs` may carry it and is
    not flagged, nor is a retry inside `except TypeError:` or a version check, nor a load inside
    `with torch.serialization.safe_globals([...]):` (code written for the weights_only loader,
    allowlisting what it needs), nor a file this code writes itself: the loading function (or
    module, or for a method another method of its class, for a module-level function the
    function of its module named for it, `_lr_saver` for `_lr_loader`: a `save(path)` /
    `load(path)` pair, a checkpoint hook and its loader) saves the same path expression or the same spelled file name, each time a state
    dict, a dict/list display, or a local name (or an attribute of `self`, across the class)
    bound only to those or to torch calls (a cache, a round trip): as trusted as the code, and read by the
    weights_only loader too; nor a file shipped inside the package (a path built
    from `__file__`). A parameter saved and read back (a broadcast of an arbitrary object
    through a buffer), or an instance of some class (`argparse.Namespace(...)`), is still
    reported: from torch 2.6 the bare load refuses what is not allowlisted. An
    explicit `weights_only=False` is a deliberate choice and is not flagged. Test modules and
    test helpers (`test_*.py`, `*_test.py`, `conftest.py`, files under `test/`, `tests/`,
    `testing/`) are left alone: tests read back the trusted files they or their fixtures wrote.

    On 20 public libraries with their test suites, reviewers who had not seen the rule judged
    18 of 27 sampled findings right before these last exceptions (the package's own files,
    the code's own caches); the wrong ones were files the code itself writes and reads back.

    Which torch the call runs under decides, and the rule reads it without importing torch:
    the configured `target-torch`; else the oldest torch the project allows, from
    `[project] dependencies` in its pyproject.toml or a `requirements*.txt` beside it
    (`torch>=2.1` -> 2.1), as ruff reads `requires-python`; else the torch distribution
    installed where torchlint runs (its metadata); else the current stable release (2.13).
    Only a call that can run under torch 1.13–2.5 is reported, and the message says which
    version was taken and from where; `--show-settings` does too. A project that allows old
    torch is checked for the oldest it allows, whatever is installed: its users may run it
    there. Before 2.6 a bare load unpickles anything, running code from the file. From 2.6 it
    loads only tensors, primitive values (numbers, strings, bytes, None), dicts, lists, tuples
    and sets of those, `OrderedDict`, `torch.Size`, `torch.device`, dtypes and the classes
    allowlisted with `torch.serialization.add_safe_globals`; an object of any other class (a
    numpy array or numpy scalar, an `argparse.Namespace`, your own classes, a whole pickled
    `nn.Module`) makes it raise `pickle.UnpicklingError`, which `torchlint run` reports.

    When TL301 (`load-without-map-location`) or TL303 (its opt-in rest) also runs and reports
    the same call, that one finding names both keywords and this rule stays quiet on the call;
    run alone, this rule reports every call it describes.

    ## Why is this bad?
    With `weights_only=False`, the default before torch 2.6, `torch.load` runs the pickle
    machinery on the file: a malicious checkpoint executes arbitrary code. torch 2.4 and 2.5
    warn about exactly this call.

    ## Example
    ```python
    state = torch.load("model.pt", map_location="cpu")
    ```

    ## Use instead
    ```python
    state = torch.load("model.pt", map_location="cpu", weights_only=True)
    # weights_only=False only for files you trust that need full pickle support
    ```

    ## Fix safety
    The fix adds `weights_only=True` and is unsafe: checkpoints that pickle objects of other
    classes (an argparse Namespace, numpy arrays, your own classes) then fail to load. It is
    not offered when `pickle_module` is passed, which `weights_only=True` rejects.
    """

    code = "TL302"
    name = "load-without-weights-only"
    summary = "`torch.load` without `weights_only` unpickles arbitrary code on torch < 2.6"
    #: The error that proves it when the program runs: torch >= 2.6 refuses the checkpoint.
    proven_by = (("UnpicklingError", r"Weights only load failed"),)
    triggers = ("load",)
    imports = ("torch",)
    fix_safety = UNSAFE
    cases = [
        Good(
            """
            import tempfile
            import torch

            def probe_accuracy(probe, features):
                with tempfile.TemporaryDirectory() as folder:
                    path = f"{folder}/probe.pt"
                    torch.save(probe.state_dict(), path)
                    return torch.load(path, map_location="cpu")
            """,
            note="a file this run just wrote in its own temporary directory: as trusted as the code",
        ),
        Good(
            """
            import os
            from pathlib import Path
            import torch

            def eigens(model, cache_file):
                if os.path.exists(cache_file):
                    return torch.load(cache_file, map_location="cpu")
                cache = {name: compute(module) for name, module in model.named_modules()}
                torch.save(cache, cache_file)
                return cache

            def shipped(name):
                path = Path(__file__).parent
                path = path / f"weights/{name}.pth"
                return torch.load(str(path), map_location="cpu")
            """,
            note="the code's own cache of values it builds, and a file shipped inside the package",
        ),
        Good(
            """
            from pathlib import Path
            import torch

            class WarmupScheduler:
                def save(self, path):
                    data = {"lr": self.lr, "step": self.step, "losses": self.losses}
                    torch.save(data, path)

                def load(self, path, end_of_epoch=False):
                    data = torch.load(path)
                    self.lr, self.step = data["lr"], data["step"]

                def dumps(self, folder):
                    torch.save(self.state_dict(), folder / "sampler.pt")

                def loads(self, folder):
                    self.load_state_dict(torch.load(Path(folder) / "sampler.pt"))
            """,
            note="a class's save/load pairs: it reads back the plain dicts its own save wrote",
        ),
        Good(
            """
            import torch

            def _scheduler_saver(scheduler, path):
                state = scheduler.state_dict()
                state["_scale_fn_ref"] = None
                torch.save(state, path)

            def _scheduler_loader(scheduler, path, end_of_epoch):
                scheduler.load_state_dict(torch.load(path, map_location="cpu"))

            class Aligner:
                def __init__(self):
                    self.alignments = {}

                def store(self, ids, paths):
                    for id, path in zip(ids, paths):
                        self.alignments[id] = path

                def _save(self, path):
                    torch.save(self.alignments, path)

                def _load(self, path, end_of_epoch=False):
                    self.alignments = torch.load(path)
            """,
            note="checkpoint hooks as module functions, and an attribute the class only ever fills with a dict",
        ),
        Bad(
            """
            import torch

            def save_object(obj, path):
                torch.save(obj, path)

            def load_object(path):
                return torch.load(path)  # error

            def save_weights(model, path):
                torch.save(model.state_dict(), path)

            def load_published(path):
                return torch.load(path)  # error

            class Holder:
                def __init__(self, config):
                    self.config = config

                def save(self, path):
                    torch.save(self.config, path)

                def load(self, path):
                    self.config = torch.load(path)  # error
            """,
            note="a module pair and an attribute that store whatever the caller passes (from torch 2.6 the bare load may refuse it); a loader no saver is named for",
        ),
        Bad(
            """
            import os
            import torch

            class Net:
                def save_pretrained(self, path):
                    torch.save(self.state_dict(), os.path.join(path, "model.bin"))

                @classmethod
                def from_pretrained(cls, path):
                    return torch.load(os.path.join(path, "model.bin"))  # error

            def convert(src, dst):
                state = torch.load(os.path.join(src, "model.bin"))  # error
                torch.save(state, os.path.join(dst, "model.bin"))
            """,
            note="`from_pretrained` reads what others saved; a converter writes the file it read elsewhere",
        ),
        Bad(
            """
            import torch

            class Stash:
                def save(self, obj, path):
                    torch.save(obj, path)

                def load(self, path):
                    return torch.load(path)  # error
            """,
            note="the pair saves whatever its caller passes: from torch 2.6 the bare load may refuse it",
        ),
        Bad(
            """
            import io
            import torch

            def broadcast(obj, src):
                buffer = io.BytesIO()
                torch.save(obj, buffer)
                buffer.seek(0)
                return torch.load(buffer)  # error
            """,
            note="an arbitrary object read back: from torch 2.6 the bare load refuses what is not allowlisted",
        ),
        Bad(
            """
            import argparse
            import torch

            torch.save(argparse.Namespace(lr=0.1), "config.pt")
            config = torch.load("config.pt", map_location="cpu")  # error
            """,
            note="a round trip of an instance of some class: torch 2.6's default refuses it",
        ),
        Good(
            """
            import torch

            def restore(path, device):
                with torch.serialization.safe_globals([Config, Vocabulary]):
                    return torch.load(path, map_location=device)
            """,
            note="written for the weights_only loader: it allowlists the classes the file holds",
        ),
        Bad(
            """
            import torch

            def restore(path, device):
                with open(path, "rb") as f:
                    return torch.load(f, map_location=device)  # error
            """,
            note="another context manager says nothing about the loader",
        ),
        Bad(
            """
            import torch
            state = torch.load("ckpt.pt", map_location="cpu")  # error
            """,
            fixed="""
            import torch
            state = torch.load("ckpt.pt", map_location="cpu", weights_only=True)  # error
            """,
        ),
        Bad(
            """
            import pickle
            from torch import load
            obj = load(path, None, pickle)  # error
            """,
            note="no fix with a pickle_module",
        ),
        Good(
            """
            import torch
            a = torch.load(p, weights_only=True)
            b = torch.load(p, map_location="cpu", weights_only=False)
            """,
            note="explicit either way",
        ),
        Good(
            """
            import torch

            def restore(path, **kwargs):
                return torch.load(path, **kwargs)
            """,
            note="**kwargs may carry weights_only (TorchFix's fix duplicates the keyword here)",
        ),
        Good(
            """
            import torch
            try:
                state = torch.load(path, map_location="cpu", weights_only=True)
            except TypeError:  # torch < 1.13 has no weights_only
                state = torch.load(path, map_location="cpu")
            """,
            note="a compatibility fallback for torch without the parameter",
        ),
        Good(
            """
            import json, pickle
            cfg = json.load(f)
            obj = pickle.load(f)
            """,
            note="other loaders",
        ),
        Bad(
            """
            import torch

            def resume(path):
                return torch.load(path)  # error
            """,
            fixed="""
            import torch

            def resume(path):
                return torch.load(path, weights_only=True)  # error
            """,
            note="run alone, the rule reports a call that lacks map_location too (where TL301 reports it, TL301's finding names both)",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.names = CheckpointNames(ctx)  # `load(...)` after `from torch import *` too

    def visit_Call(self, node: cst.Call) -> None:
        if self.names.qualname(node.func) not in LOAD_FUNCTIONS or not missing_weights_only(self.ctx, node, self.names):
            return
        fix = None
        if weights_only_fixable(node):
            fix = NodeFix("Add `weights_only=True`", UNSAFE, ((node, with_keyword(node, "weights_only", "True")),))
        self.report(node, f"`torch.load` without `weights_only`: {weights_only_risk(self.ctx)}; "
                          "pass weights_only=True (or False for trusted files)", fix=fix)

    @classmethod
    def keep_in_project(cls, project, finding) -> bool:
        """One finding per call: where TL301's finding on the same call stands (it names
        weights_only too), this one gives way. Where TL301 drops its own (a CPU-only project,
        a round trip), this one stands: the unpickling risk remains."""
        from .load_without_map_location import LoadWithoutMapLocation  # it imports this module
        from .load_without_map_location_anywhere import LoadWithoutMapLocationAnywhere

        reported = project.enabled - project.proving  # under `torchlint run`, TL303 only proves
        return not any(rule.code in reported and rule.reports_load_at(project, finding)
                       for rule in (LoadWithoutMapLocation, LoadWithoutMapLocationAnywhere))


def missing_weights_only(ctx: FileContext, node: cst.Call, names: CheckpointNames | None = None) -> bool:
    """Whether TL302 describes this `torch.load` call: no `weights_only` (nor `**kwargs` that
    may carry it), not a compatibility fallback, not a file this run wrote itself, and a target
    torch whose default differs."""
    if keyword_arg(node, "weights_only") is not None or has_double_star(node):
        return False
    if is_test_path(ctx.path):
        return False  # a test reads back the files it or its fixtures wrote: trusted ones
    if in_compat_fallback(ctx):
        return False  # `except TypeError:` retrying without weights_only for an old torch
    if in_safe_globals(ctx):
        return False  # `with torch.serialization.safe_globals([...]):` is the weights_only loader's allowlist
    if names is not None and saved_here_by_this_code(ctx, names, node):
        return False  # a cache or round trip of this code's own values: trusted, and weights_only reads it
    if from_the_package(ctx, node):
        return False  # `Path(__file__).parent / "weights" / ...`: shipped with the code, as trusted as it
    target = torch_judged_under(ctx)
    return target is None or (1, 13) <= target < (2, 6)


def torch_judged_under(ctx: FileContext) -> tuple[int, int] | None:
    """The torch whose `torch.load` default decides: the configured or pinned `target-torch`,
    else the one the session assumed (installed here, else the stable release); None only
    for a context without a session (a rule's cases), which then reports every load."""
    target = target_torch(ctx)
    if target is not None:
        return target
    config = getattr(ctx, "config", None)
    return parse_version(getattr(config, "assumed_torch", None)) if config is not None else None


def _torch_named(ctx: FileContext) -> str:
    """Which torch the finding assumed and why, for its message."""
    config = getattr(ctx, "config", None)
    if config is None:
        return ""
    target, source = getattr(config, "target_torch", None), getattr(config, "target_torch_source", None)
    if target is None:
        assumed = getattr(config, "assumed_torch_source", None)
        return f" ({assumed})" if assumed else ""
    if source is None:
        return f" (target-torch is {target})"
    file_name = Path(source.partition(": ")[0]).name  # "…/pyproject.toml: torch>=2.1"
    return f" (the project allows torch {target}: {file_name})"


def in_safe_globals(ctx: FileContext) -> bool:
    """Inside `with torch.serialization.safe_globals([...]):`: the code is written for the
    weights_only loader (torch >= 2.6's default) and allowlists the classes it needs."""
    for ancestor in ctx.ancestors:
        if type(ancestor) is cst.With:
            for item in ancestor.items:
                if type(item.item) is cst.Call and ctx.qualname(item.item.func) == "torch.serialization.safe_globals":
                    return True
    return False


def weights_only_risk(ctx: FileContext) -> str:
    """What a load without `weights_only` does under the torch the code is judged under."""
    if torch_judged_under(ctx) is None:
        return ("before torch 2.6 it unpickles arbitrary code; from 2.6 it refuses objects of classes outside its "
                "allowlist (numpy arrays, argparse.Namespace, your own classes)")
    return f"on torch < 2.6{_torch_named(ctx)} it defaults to full unpickling, so a malicious file runs code"


def weights_only_fixable(node: cst.Call) -> bool:
    """`weights_only=True` can be added: no `pickle_module`, which it rejects."""
    pickle_module = keyword_arg(node, "pickle_module") or (positional_args(node)[2:3] or [None])[0]
    return pickle_module is None
