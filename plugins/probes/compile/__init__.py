"""Compile probe (``torchlint run --compile[=eager|aot_eager|inductor]``): TL708-TL711.

The plugin: the probe's rules with their docs, and the probe class, imported only in the
child of `torchlint run` (this module must not import torch: `torchlint check` loads it).
"""

from __future__ import annotations

from pathlib import Path

from torchlint.findings import Severity
from torchlint.pluginmanager import hookimpl
from torchlint.probe import RuntimeRule


class GraphBreak(RuntimeRule):
    """
    ## What it does
    Reports a graph break `torch.compile` (Dynamo) took while compiling the model the program
    ran (`torchlint run --compile`): the user line, PyTorch's reason and hint, the graph-break
    reference id (`GB0170`) when PyTorch gives one, and how many times it happened. The breaks
    are read from Dynamo's structured trace, which sees every one (`torch._dynamo.explain`
    can miss some).

    ## Why is this bad?
    Each break splits the model into separately compiled graphs with Python in between: the
    compiler cannot fuse across it, and a break inside a loop or a hot `forward` can cost most
    of the speed-up.

    ## Example
    ```python
    def forward(self, x):
        h = self.fc(x)
        if h.sum() > 0:      # data-dependent branch: graph break
            h = h * 2
        return h
    ```

    ## Use instead
    ```python
    def forward(self, x):
        h = self.fc(x)
        return torch.where(h.sum() > 0, h * 2, h)
    ```
    """

    code = "TL708"
    name = "graph-break"
    summary = "torch.compile broke the model's graph at this line"
    severity = Severity.WARNING


class CompileFailure(RuntimeRule):
    """
    ## What it does
    Reports that compiling what the program compiles itself (each function or module it
    passes to `torch.compile`), or else the model it ran, failed, and which stage failed:
    the backends are tried in order `eager` (Dynamo only), `aot_eager` (plus AOTAutograd) and
    `inductor` (plus code generation: with `--compile=inductor`, or when the program compiles
    with Inductor, `torch.compile`'s default), so the first backend that fails names the
    stage: Dynamo, AOTAutograd or Inductor. The finding points at the user line in the error
    when there is one, else at the program's call of its compiled function; a C++ compile
    error's first `error:` line is in the message. With `--minify`, an Inductor failure's
    graph is shrunk by torch's minifier to the ops that still fail with the same compiler
    error, named at the user's lines, and written as a script that runs alone, beside
    Inductor's debug dump (`output_code.py`, `fx_graph_runnable.py`).

    ## Why is this bad?
    `torch.compile(model)` raises on the first call, or falls back to eager silently when
    errors are suppressed, and the traceback is mostly compiler internals.

    ## Example
    ```python
    compiled = torch.compile(model)   # fails inside Inductor on an unsupported op
    ```

    ## Use instead
    Work around the failing operation at the reported line, compile with a backend that
    works (`backend="aot_eager"`), or exclude the function with `torch.compiler.disable`.
    """

    code = "TL709"
    name = "compile-failure"
    summary = "torch.compile failed on the model; the first failing backend names the stage"
    #: When the program itself died of this compile error, this finding is the one report of it.
    explains_program_error = True


class CompiledOutputMismatch(RuntimeRule):
    """
    ## What it does
    Runs what the program compiles itself (each function or module it passes to
    `torch.compile`, up the backend ladder to Inductor when the program uses it), or else the
    model it ran, on the inputs of its first call, eagerly and compiled (a module in `eval()`
    mode, with the same random seed), and reports outputs that differ by more than
    a tolerance chosen by dtype (float32: rtol 1e-4, atol 1e-5; float16: 1e-2, 1e-3;
    bfloat16: 1.6e-2, 1e-2; float64: 1e-7, 1e-7). The message gives the largest absolute and
    relative errors and the tolerances used; for a program's own compile the finding points
    at its first call of the compiled function and names the `torch.compile` line. With
    `--minify`, a drift that only Inductor shows is shrunk by torch's minifier to the ops
    that still drift, named at the user's lines, and written as a script that runs alone
    (torchlint runs it to check it drifts the same way), beside Inductor's debug dump.

    ## Why is this bad?
    A compiled model that computes something else trains or predicts differently with no
    error at all.

    ## Example
    ```python
    def forward(self, x):
        approximate = "tanh" if torch.compiler.is_compiling() else "none"
        return F.gelu(self.fc(x), approximate=approximate)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return F.gelu(self.fc(x))
    ```
    """

    code = "TL710"
    name = "compiled-output-mismatch"
    summary = "The compiled model's output differs from eager beyond the dtype's tolerance"


class Recompilation(RuntimeRule):
    """
    ## What it does
    Reports a function `torch.compile` compiled more than once, with the count and the guard
    that failed (e.g. "tensor 'x' size mismatch at index 0. expected 32, actual 7"). The
    compile probe calls the model with the inputs of its first calls of different shapes, so
    a changing batch size shows up here.

    ## Why is this bad?
    Each recompilation costs the compile time again, and after
    `torch._dynamo.config.recompile_limit` recompilations the function runs eagerly.

    ## Example
    ```python
    for x, y in loader:          # the last batch is smaller
        loss = compiled(x)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=32, drop_last=True)
    # or: torch._dynamo.mark_dynamic(x, 0), or torch.compile(model, dynamic=True)
    ```
    """

    code = "TL711"
    name = "recompilation"
    summary = "torch.compile recompiled a function; the failing guard says why"
    severity = Severity.WARNING


@hookimpl
def torchlint_rules() -> list[type]:
    return [GraphBreak, CompileFailure, CompiledOutputMismatch, Recompilation]


@hookimpl
def torchlint_run_options() -> list:
    import click

    class Backend(click.Choice):
        """The top of the compile ladder; `--compile train.py` gets a message saying what to write."""

        def convert(self, value, param, ctx):
            if value not in self.choices and (value.endswith(".py") or ":" in value or Path(value).exists()):
                self.fail(f"{value!r} is not a backend: `--compile` takes its value after `=` (--compile=eager); put a bare "
                          f"--compile after the target (torchlint run {value} --compile)", param, ctx)
            return super().convert(value, param, ctx)

    return [click.Option(["--compile"], type=Backend(["eager", "aot_eager", "inductor"]), is_flag=False, flag_value="aot_eager",
                         default=None, help="Compile the model the program runs up the backend ladder eager -> aot_eager "
                         "[-> inductor]: graph breaks, recompilations, the failing stage, accuracy and speed-up. --compile "
                         "alone means --compile=aot_eager."),
            click.Option(["--minify"], is_flag=True, default=False,
                         help="When Inductor fails to compile the model or its output drifts from eager, shrink the failing "
                         "graph with torch's minifier in a process of its own and write it as a script that runs alone, "
                         "with Inductor's debug dump, to the --report folder (else ./torchlint-minify). Implies "
                         "--compile=inductor unless --compile is given."),
            click.Option(["--minify-timeout"], type=click.FloatRange(min=1), default=120.0, show_default=True, metavar="SECONDS",
                         help="Budget of --minify, the minifier and the run of its script together; the minifier is "
                         "stopped when it runs out, and the report says so.")]


@hookimpl
def torchlint_run_section(name: str, result: dict, cwd: Path):
    if name != "compile":
        return None
    from torchlint.plugins.probes.compile.section import section

    return section(result, cwd)


@hookimpl
def torchlint_probes() -> list[type]:
    from torchlint.plugins.probes.compile.probe import PROBE

    return [PROBE]
