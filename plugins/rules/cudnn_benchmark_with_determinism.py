from __future__ import annotations

import libcst as cst

from torchlint.rule import Bad, Good, Rule

_BENCHMARK = "torch.backends.cudnn.benchmark"
_DETERMINISTIC_FLAG = "torch.backends.cudnn.deterministic"
_DETERMINISTIC_CALL = "torch.use_deterministic_algorithms"


class CudnnBenchmarkWithDeterminism(Rule):
    """
    ## What it does
    Flags `torch.backends.cudnn.benchmark = True` in a function (or at module level) that also
    asks for reproducibility with `torch.use_deterministic_algorithms(True)` or
    `torch.backends.cudnn.deterministic = True`, where both can run on the same path: settings
    in the two branches of one `if`, or in different functions, are left alone.

    Off by default: on 20 public libraries and frameworks with their test suites, judged by
    reviewers who did not write the rule, 0 of 2 sampled findings were right (2 in all), both
    tests setting the flags one after the other to simulate a reset; on 17 other libraries none
    of its findings was right either. `--extend-select TL608` turns it on.

    ## Why is this bad?
    Benchmark mode times the candidate convolution algorithms on the first call of each
    input shape and keeps the fastest. Timing is noisy, so two runs can pick different
    algorithms and produce different numbers: PyTorch's reproducibility notes ask for
    `benchmark = False` alongside the determinism switches. The two settings contradict each
    other and the run silently loses the reproducibility it asked for.

    ## Example
    ```python
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = True
    ```

    ## Use instead
    ```python
    if args.deterministic:
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.benchmark = False
    else:
        torch.backends.cudnn.benchmark = True
    ```
    """

    code = "TL608"
    name = "cudnn-benchmark-with-determinism"
    summary = "`cudnn.benchmark = True` next to deterministic settings defeats reproducibility"
    default_enabled = False
    triggers = ("benchmark",)
    imports = ("torch",)
    cases = [
        Bad(
            """
            import torch

            def setup(seed):
                torch.manual_seed(seed)
                torch.backends.cudnn.deterministic = True
                torch.backends.cudnn.benchmark = True  # error
            """
        ),
        Bad(
            """
            import torch
            import torch.backends.cudnn as cudnn

            cudnn.benchmark = True  # error
            if args.seed is not None:
                torch.use_deterministic_algorithms(True)
            """,
            note="an alias, and a determinism switch that runs after benchmark on the same path",
        ),
        Good(
            """
            import torch

            if args.deterministic:
                torch.backends.cudnn.deterministic = True
                torch.backends.cudnn.benchmark = False
            else:
                torch.backends.cudnn.benchmark = True
            """,
            note="exclusive branches",
        ),
        Good(
            """
            import torch

            def reproducible():
                torch.use_deterministic_algorithms(True)

            def fast():
                torch.backends.cudnn.benchmark = True
            """,
            note="different functions are different modes",
        ),
        Good(
            """
            import torch
            torch.backends.cudnn.benchmark = True
            torch.backends.cudnn.deterministic = False
            torch.use_deterministic_algorithms(False)
            torch.backends.cudnn.benchmark = not args.deterministic
            """,
            note="determinism switched off, and benchmark tied to the opposite flag",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._benchmarks: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = []
        self._deterministic: list[tuple[cst.CSTNode, ...]] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        if not _is_true(node.value):
            return
        for target in node.targets:
            qualname = self.ctx.qualname(target.target)
            if qualname == _BENCHMARK:
                self._benchmarks.append((node, tuple(self.ctx.ancestors)))
            elif qualname == _DETERMINISTIC_FLAG:
                self._deterministic.append(tuple(self.ctx.ancestors))

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) != _DETERMINISTIC_CALL:
            return
        args = [arg for arg in node.args if arg.keyword is None or arg.keyword.value == "mode"]
        if args and _is_true(args[0].value):
            self._deterministic.append(tuple(self.ctx.ancestors))

    def finish(self) -> None:
        for node, path in self._benchmarks:
            if any(_same_path(path, other) for other in self._deterministic):
                self.report(
                    node,
                    "`cudnn.benchmark = True` alongside deterministic settings: benchmarking may pick different "
                    "convolution algorithms each run, so results are not reproducible; set it to False there",
                )


def _is_true(node: cst.BaseExpression) -> bool:
    return type(node) is cst.Name and node.value == "True"


def _scope(path: tuple[cst.CSTNode, ...]) -> cst.CSTNode | None:
    for ancestor in reversed(path):
        if type(ancestor) in (cst.FunctionDef, cst.Lambda):
            return ancestor
    return None


def _same_path(first: tuple[cst.CSTNode, ...], second: tuple[cst.CSTNode, ...]) -> bool:
    """Both in the same function (or both at module level) and not in exclusive branches of
    a shared `if`/`try`: one `if` holds one in its body and the other in its `orelse`."""
    if _scope(first) is not _scope(second):
        return False
    for index, (mine, theirs) in enumerate(zip(first, second)):
        if mine is not theirs:
            parent = first[index - 1]
            return type(parent) not in (cst.If, cst.Try, cst.Match)
    return True
