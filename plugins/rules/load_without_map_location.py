from __future__ import annotations

import libcst as cst

from torchlint.fix import SAFE, UNSAFE, NodeFix
from torchlint.rule import Bad, Good, Rule

from torchlint.static.names import dotted_name

from ._calls import argument, has_star_args, with_keyword
from .load_without_weights_only import missing_weights_only, weights_only_fixable, weights_only_risk

#: TL302, load-without-weights-only: a call missing both keywords is one finding, this rule's.
WEIGHTS_ONLY_CODE = "TL302"

LOAD_FUNCTIONS = frozenset({"torch.load", "torch.serialization.load"})


class LoadWithoutMapLocation(Rule):
    """
    ## What it does
    Flags `torch.load(...)` calls that pass no `map_location`, by keyword or as the second
    positional argument.

    ## Why is this bad?
    Without `map_location`, every tensor is restored to the device it was saved from. A
    checkpoint written on `cuda:0` then fails to load on a CPU-only machine ("Attempting to
    deserialize object on a CUDA device but torch.cuda.is_available() is False"), or piles
    every rank's weights onto GPU 0 in multi-GPU jobs.

    A call that forwards `*args` or `**kwargs` may carry `map_location` and is not flagged;
    neither is a load inside a `Dataset` subclass, which reads caches it wrote itself on the
    CPU to build CPU batches, nor a round trip (`torch.save(obj, buffer)` then
    `torch.load(buffer)` in one function), where the devices necessarily exist.

    When TL302 (`load-without-weights-only`) also runs and would report the same call, this
    rule's one finding names both keywords and TL302 stays quiet on that call.

    ## Example
    ```python
    state = torch.load("model.pt")
    ```

    ## Use instead
    ```python
    state = torch.load("model.pt", map_location="cpu")     # or map_location=device
    ```

    ## Fix safety
    The fix adds `map_location=device` when a variable named `device` is in scope, else
    `map_location="cpu"`. It is safe when the loaded object goes straight into
    `load_state_dict(...)`, which copies every tensor onto the model's own devices anyway;
    elsewhere it is unsafe, because code may rely on tensors arriving on the GPU. When the
    finding names `weights_only` too, an unsafe fix also adds `weights_only=True` (not with a
    `pickle_module`); a safe one stays as it is, and TL302 offers `weights_only` once it has
    been applied.
    """

    code = "TL301"
    name = "load-without-map-location"
    summary = "`torch.load` without `map_location` only loads where the checkpoint was saved"
    triggers = ("load",)
    imports = ("torch",)
    fix_safety = UNSAFE
    cases = [
        Bad(
            """
            import torch
            state = torch.load("ckpt.pt")  # error
            """,
            fixed="""
            import torch
            state = torch.load("ckpt.pt", map_location="cpu")  # error
            """,
        ),
        Bad(
            """
            import torch

            def restore(model, path, device):
                model.load_state_dict(torch.load(path)["model"])  # error
                extra = torch.load(  # error
                    path,
                )
                return extra
            """,
            fixed="""
            import torch

            def restore(model, path, device):
                model.load_state_dict(torch.load(path, map_location=device)["model"])  # error
                extra = torch.load(  # error
                    path,
                    map_location=device,
                )
                return extra
            """,
            note="a `device` in scope is used, and a one-argument-per-line call keeps its layout",
        ),
        Bad(
            """
            import torch as T
            from torch import load as tl
            a = T.load(path, weights_only=True)  # error
            b = tl(path)  # error
            """,
            note="aliases resolve like the real name",
        ),
        Bad(
            """
            import torch

            def restore(model, path):
                model.load_state_dict(torch.load(path)["model"])  # error
            """
        ),
        Good('import torch\nstate = torch.load("ckpt.pt", map_location="cpu")'),
        Good("import torch\nstate = torch.load(path, device)", note="map_location passed positionally"),
        Good(
            """
            import torch
            state = torch.load(
                path,
                map_location=lambda storage, loc: storage,
            )
            """,
            note="a lambda on a continuation line",
        ),
        Good(
            """
            import torch

            def restore(path, **kwargs):
                return torch.load(path, **kwargs)
            """,
            note="**kwargs may carry map_location",
        ),
        Good(
            """
            import io
            import torch

            def round_trip(model):
                buffer = io.BytesIO()
                torch.save(model.state_dict(), buffer)
                buffer.seek(0)
                return torch.load(buffer)
            """,
            note="saved and loaded again in one function",
        ),
        Good(
            """
            import torch
            from torchvision.datasets import VisionDataset

            class Digits(VisionDataset):
                def _load_data(self):
                    return torch.load(self.processed_file)
            """,
            note="a dataset reading its own processed cache",
        ),
        Good(
            """
            import json, pickle

            def load(path):
                ...

            cfg = json.load(open("c.json"))
            obj = pickle.load(open("o.pkl", "rb"))
            data = load("x")
            """,
            note="other functions called load",
        ),
        Good(
            """
            from torch import load

            def load(path):
                return open(path).read()

            text = load("notes.txt")
            """,
            note="a local function shadows the import",
        ),
        Good(
            """
            import torch

            def restore(torch, path):
                return torch.load(path)
            """,
            note="a parameter named torch is not the module",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not self.flags(node):
            return
        device = self._device_in_scope()
        fix = NodeFix(
            f"Add `map_location={device}`",
            SAFE if self._feeds_load_state_dict() else UNSAFE,
            ((node, _with_map_location(node, device)),),
        )
        if self._also_missing_weights_only(node):
            message, fix = self._with_weights_only(node, device, fix)
        else:
            message = (
                "`torch.load` without `map_location`: tensors return to the device they were saved on; "
                'pass map_location="cpu" or the target device'
            )
        self.report(node, message, fix=fix)

    def flags(self, node: cst.Call) -> bool:
        """Whether this rule reports `node` (TL302 asks, to leave the call to this rule)."""
        if self.ctx.qualname(node.func) not in LOAD_FUNCTIONS:
            return False
        if has_star_args(node) or argument(node, "map_location", 1) is not None:
            return False
        if self._in_dataset_class():
            return False  # datasets read caches they wrote themselves, on the CPU, for CPU batches
        if self._round_trip(node):
            return False  # saved and loaded again in this function: the devices exist
        return True

    # -- one finding for a call TL302 (load-without-weights-only) would report too ----------
    def _also_missing_weights_only(self, node: cst.Call) -> bool:
        return self.ctx.is_enabled(WEIGHTS_ONLY_CODE) and missing_weights_only(self.ctx, node)

    def _with_weights_only(self, node: cst.Call, device: str, fix: NodeFix) -> tuple[str, NodeFix]:
        """The message naming both keywords, and a fix adding both where that is no riskier:
        a safe `map_location` fix stays alone (TL302 offers `weights_only` on the next pass)."""
        message = (
            "`torch.load` without `map_location` or `weights_only`: tensors return to the device they were saved "
            f"on, and {weights_only_risk(self.ctx)}; pass map_location=\"cpu\" (or the target device) and "
            "weights_only=True (False only for trusted files)"
        )
        if fix.applicability == UNSAFE and weights_only_fixable(node):
            both = with_keyword(_with_map_location(node, device), "weights_only", "True")
            fix = NodeFix(f"Add `map_location={device}` and `weights_only=True`", UNSAFE, ((node, both),))
        return message, fix

    def _round_trip(self, node: cst.Call) -> bool:
        """`torch.save(obj, buffer)` ... `torch.load(buffer)` in one function."""
        source = argument(node, "f", 0)
        function = self.ctx.enclosing_function()
        if source is None or function is None or not isinstance(source.value, cst.Name):
            return False
        target = source.value.value
        from torchlint.static.walker import iter_nodes

        for inner in iter_nodes(function.body):
            if type(inner) is cst.Call and self.ctx.qualname(inner.func) in ("torch.save", "torch.serialization.save"):
                written = argument(inner, "f", 1)
                if written is not None and isinstance(written.value, cst.Name) and written.value.value == target:
                    return True
        return False

    def _in_dataset_class(self) -> bool:
        for ancestor in self.ctx.ancestors:
            if isinstance(ancestor, cst.ClassDef):
                for base in ancestor.bases:
                    name = dotted_name(base.value) or ""
                    if name.rpartition(".")[2].endswith("Dataset"):
                        return True
        return False

    def _device_in_scope(self) -> str:
        function = self.ctx.enclosing_function()
        if function is not None and "device" in self.ctx.bindings_of(function):
            return "device"
        return '"cpu"'

    def _feeds_load_state_dict(self) -> bool:
        """`model.load_state_dict(torch.load(p))` or `...(torch.load(p)["model"])`."""
        ancestors = self.ctx.ancestors
        index = len(ancestors) - 1
        while index >= 0 and isinstance(ancestors[index], (cst.Subscript, cst.SubscriptElement, cst.Index)):
            index -= 1
        if index < 1 or not isinstance(ancestors[index], cst.Arg):
            return False
        call = ancestors[index - 1]
        return (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "load_state_dict"
            and call.args[0] is ancestors[index]
        )


def _with_map_location(call: cst.Call, device: str) -> cst.Call:
    return with_keyword(call, "map_location", device)
