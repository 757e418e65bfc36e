from __future__ import annotations

import libcst as cst

from torchlint.rule import Bad, Good, Rule

from ._calls import argument, has_star_args

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

    A call that forwards `*args` or `**kwargs` may carry `map_location` and is not flagged.

    ## Example
    ```python
    state = torch.load("model.pt")
    ```

    ## Use instead
    ```python
    state = torch.load("model.pt", map_location="cpu")     # or map_location=device
    ```
    """

    code = "TL301"
    name = "load-without-map-location"
    summary = "`torch.load` without `map_location` only loads where the checkpoint was saved"
    triggers = ("load",)
    cases = [
        Bad(
            """
            import torch
            state = torch.load("ckpt.pt")  # error
            """
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
        if self.ctx.qualname(node.func) not in LOAD_FUNCTIONS:
            return
        if has_star_args(node) or argument(node, "map_location", 1) is not None:
            return
        self.report(
            node,
            "`torch.load` without `map_location`: tensors return to the device they were saved on; "
            'pass map_location="cpu" or the target device',
        )
