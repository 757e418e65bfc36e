from __future__ import annotations

import libcst as cst

from torchlint.rule import Bad, Good, Rule

from torchlint.semantic.program_facts import is_script

from ._loops import cuda_guarded


class HardCodedCuda(Rule):
    """
    ## What it does
    Flags library code that pins work to CUDA: `x.cuda()`, `.to("cuda")`, `device="cuda"`
    (or `"cuda:0"`) passed to a `torch` function or `.to`, and `torch.device("cuda")` (not
    when it is compared, as in `torch.device("cuda") in devices`).

    Only library modules are checked. A file is an entry script — free to choose its
    machine — when it has an `if __name__ == "__main__":` guard, imports a command-line
    parser (argparse, click, fire, typer, hydra, absl), is `__main__.py`/`setup.py`, or is a
    test. Code under a CUDA condition (`if torch.cuda.is_available():`, `"cuda" if ... else
    "cpu"`), in CUDA-named functions (`def _cuda_kernel`, `def cuda(self)`) and in `try`
    blocks with handlers is left alone.

    ## Why is this bad?
    A library cannot know where it will run. A hard-coded `cuda` raises "Torch not compiled
    with CUDA enabled" on CPU-only machines and Macs, ignores `CUDA_VISIBLE_DEVICES`-style
    choices made by the caller, and moves tensors to GPU 0 in multi-GPU jobs where the
    caller's model lives on another device. Take the device from the inputs or parameters
    (`x.device`, `next(model.parameters()).device`) or from an argument.

    ## Example
    ```python
    def make_mask(lengths):
        return torch.arange(lengths.max(), device="cuda")[None] < lengths[:, None]
    ```

    ## Use instead
    ```python
    def make_mask(lengths):
        return torch.arange(lengths.max(), device=lengths.device)[None] < lengths[:, None]
    ```
    """

    code = "TL203"
    name = "hard-coded-cuda"
    summary = "library code hard-codes `.cuda()` / `device=\"cuda\"` instead of following its inputs"
    triggers = ("cuda",)
    default_enabled = False
    cases = [
        Bad(
            """
            import torch

            def make_mask(lengths):
                steps = torch.arange(lengths.max(), device="cuda:0")  # error
                return steps[None] < lengths[:, None]

            class Buffer:
                def __init__(self, n):
                    self.data = torch.zeros(n).cuda()  # error
                    self.device = torch.device("cuda")  # error
                    self.idx = torch.arange(n).to("cuda")  # error
            """
        ),
        Bad(
            """
            from torch import device as Device

            DEFAULT = Device("cuda")  # error
            """,
            note="an aliased torch.device at module level",
        ),
        Good(
            """
            import torch

            def make_mask(lengths):
                device = "cuda" if torch.cuda.is_available() else "cpu"
                if torch.cuda.is_available():
                    lengths = lengths.cuda()
                return torch.arange(lengths.max(), device=lengths.device)
            """,
            note="device chosen under a CUDA condition",
        ),
        Good(
            """
            import argparse
            import torch

            parser = argparse.ArgumentParser()
            model = Net().cuda()
            x = torch.zeros(3, device="cuda")
            """,
            note="an entry script may choose its machine",
        ),
        Good(
            """
            import torch

            class Module:
                def cuda(self, device=None):
                    return self._apply(lambda t: t.cuda(device))

            def _cuda_graph_warmup(x):
                return x.to("cuda")

            def run(x, device="cuda", where=torch.device("cuda")):
                if torch.device("cuda") in seen or check_device(x, device="cuda"):
                    return x
                return x.to(device)
            """,
            note="the cuda() method itself, CUDA-named helpers, defaults the caller can change, questions about devices",
        ),
        Good(
            files={
                "tests/test_ops.py": """
                import torch

                def test_add():
                    x = torch.ones(2, device="cuda")
                """
            },
            note="tests",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._library = not is_script(ctx.path, ctx.text)

    def visit_Call(self, node: cst.Call) -> None:
        if not self._library:
            return
        spelled = self._hard_coded(node)
        if spelled is None or any(type(a) is cst.Param for a in self.ctx.ancestors):
            return  # a parameter's default: the caller can pass another device
        if cuda_guarded(self.ctx.ancestors, node):
            return
        self.report(
            node,
            f"{spelled} pins library code to CUDA: it fails on CPU-only machines and ignores the caller's "
            "device; follow an input's `.device` or take `device` as an argument",
        )

    def _hard_coded(self, node: cst.Call) -> str | None:
        func = node.func
        if type(func) is cst.Attribute and func.attr.value == "cuda":
            if self.ctx.qualname(func) is None:  # `x.cuda()`, not a `torch.cuda` module path
                return "`.cuda()`"
        if type(func) is cst.Attribute and func.attr.value == "to" and node.args:
            first = node.args[0]
            if first.keyword is None and _is_cuda_string(first.value):
                return '`.to("cuda")`'
        qualname = self.ctx.qualname(func) or ""
        if qualname == "torch.device" and node.args and _is_cuda_string(node.args[0].value):
            parent = self.ctx.ancestors[-1] if self.ctx.ancestors else None
            if type(parent) in (cst.Comparison, cst.ComparisonTarget):
                return None  # `torch.device("cuda") in devices` asks, it does not place
            return '`torch.device("cuda")`'
        placing = qualname.startswith("torch.") or (type(func) is cst.Attribute and func.attr.value == "to")
        for arg in node.args:
            if placing and arg.keyword is not None and arg.keyword.value == "device" and _is_cuda_string(arg.value):
                return '`device="cuda"`'
        return None


def _is_cuda_string(node: cst.BaseExpression) -> bool:
    if type(node) is not cst.SimpleString:
        return False
    text = node.evaluated_value
    return isinstance(text, str) and (text == "cuda" or text.startswith("cuda:"))
