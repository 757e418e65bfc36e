"""Compiled profile probe (``torchlint run --compile --profile``): eager next to Inductor, TL724.

The plugin: its rule with the docs, its report section and the probe class. It runs only when
both ``--compile`` and ``--profile`` are given; this module must not import torch
(`torchlint check` loads it), and the probe's work (``torchlint.runtime.compile.profile``) is
imported only by a run that asked for both.
"""

from __future__ import annotations

from pathlib import Path

from torchlint.findings import Severity
from torchlint.pluginmanager import hookimpl
from torchlint.probe import RuntimeRule


class CompiledSlowerThanEager(RuntimeRule):
    """
    ## What it does
    With `torchlint run --compile --profile`, compiles what the program compiles (or else its
    model) with Inductor, times eager and compiled calls alternately on the inputs of the
    program's first call after warm-up, profiles a few of each, and reports the user functions
    and lines that take at least 1.25 times as long compiled as eager (by at least 5 % of the
    eager call), and the whole call when it is slower compiled. Kernels are mapped to the user
    lines whose operations they fused through Inductor's provenance tracking. A line's or
    function's time is that of its operations and kernels on both sides (Python between
    operations is no line's); what its compiled regions spend outside kernels (Dynamo's guards,
    the graphs' wrappers, the eager code between graphs) is shown apart and counts in the
    whole call. A kernel fusing several lines is
    shared among them by operation count, an estimate: a line or function is reported only
    when most of its compiled time is its own, and a function only when nothing it calls is
    slower too.

    ## Why is this bad?
    `torch.compile` costs compile time on every start and is there to make the program faster.
    A region it makes slower (a graph break in a hot loop, many small graphs whose guards cost
    more than their work, a fused kernel slower than ATen's) is time spent for nothing: the
    report names where, with the numbers, and links the hottest graph's generated code.

    ## Example
    ```python
    def refine(h):
        for _ in range(8):
            h = h - 0.1 * torch.tanh(h)
            if h.abs().max().item() < 1e-6:   # graph break in the loop
                break
        return h
    ```

    ## Use instead
    ```python
    def refine(h):
        for _ in range(8):
            h = h - 0.1 * torch.tanh(h)
        return h
    ```
    or leave the region out of the compiled code (`torch.compiler.disable`).
    """

    code = "TL724"
    name = "compiled-slower-than-eager"
    summary = "A function or line runs slower compiled with Inductor than eagerly"
    severity = Severity.INFO


@hookimpl
def torchlint_rules() -> list[type]:
    return [CompiledSlowerThanEager]


@hookimpl
def torchlint_run_section(name: str, result: dict, cwd: Path):
    if name != "compiled-profile":
        return None
    from torchlint.plugins.probes.compiled_profile.section import section

    return section(result, cwd)


@hookimpl
def torchlint_probes() -> list[type]:
    from torchlint.plugins.probes.compiled_profile.probe import PROBE

    return [PROBE]
