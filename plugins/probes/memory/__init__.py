"""Memory probe: autograd graphs kept alive from step to step (TL737), and what filled the
memory when the program ran out of it (TL738), with a report section of the memory each
module and user line costs.

This module is imported by the static ``torchlint check`` and must never import torch: the
probe itself (``probe.py`` and its helpers) is imported only by ``torchlint_probes``, in the
child process of ``torchlint run``. The report section is rendered here, in the parent,
from the plain data the probe publishes (``section.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchlint.findings import Severity
from torchlint.pluginmanager import hookimpl
from torchlint.probe import RuntimeRule

#: The probe's name: its summary's key in the JSON report, and `--disable-probe memory`.
NAME = "memory"
#: Iterations watched closely in each phase (training steps, then forward-only calls).
DEFAULT_STEPS = 5


class MemoryGrowth(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` when tensors that carry an autograd graph outlive the
    iteration that made them and pile up: a running total of the loss (`total_loss += loss`),
    a list that collects losses or model outputs (`losses.append(loss)`,
    `outputs.append(model(x))`), an evaluation loop run without `torch.no_grad()` that does
    either. It is reported at the line that keeps the graph (the `+=`, the `append`), and
    confirms the static TL601 there.

    The probe measures the growth before it reports. It follows each sum (`+`, `+=`, `-`,
    `*`, `/`, `torch.cat`, `torch.stack`) one of whose operands is a tensor with a graph from
    an earlier iteration, made by the same accumulation, and counts the autograd nodes the
    kept graph reaches after each iteration; it follows the model's outputs, loss values and
    backward roots, and reports them when more of them are alive after each iteration, with
    the list that holds them and its `append` line. The bytes autograd saved for backward
    that are still held come from `saved_tensors_hooks` (on a GPU,
    `torch.cuda.memory_allocated()` after each step is in the report's memory section too).

    An iteration ends with an optimizer step (once every optimizer that steps has stepped: a
    GAN's two steps are one), or, in a loop without steps, when the same model is called
    again. Left alone: a sum that is back-propagated itself (accumulation over micro-batches
    for one backward pass), tensors kept between optimizer steps that a later backward pass
    goes through (a policy gradient's episode), and a single tensor kept across iterations
    that does not grow.

    ## Why is this bad?
    Every kept tensor keeps the graph of the iteration that made it. After `backward()` the
    graph's saved tensors are freed but its nodes stay: host memory grows by a graph per step
    and later additions extend the graph further. Where no `backward()` ran (an evaluation
    loop with grad on), the graph still holds every activation autograd saved: GPU memory
    grows by a batch's activations per iteration until it runs out.

    ## Example
    ```python
    total_loss = 0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss            # keeps every step's graph

    outputs = []
    for x, _ in val_loader:           # no torch.no_grad()
        outputs.append(model(x))      # keeps every batch's activations
    ```

    ## Use instead
    ```python
    total_loss = 0.0
    for x, y in loader:
        ...
        total_loss += loss.item()

    outputs = []
    with torch.no_grad():
        for x, _ in val_loader:
            outputs.append(model(x))
    ```

    ## Known limitations
    The probe watches the first `--memory-steps` iterations (5 by default) of the training
    loop and of the first loop that calls the model with grad on and no optimizer step. A
    graph kept some other way (a hidden state carried from batch to batch, a value derived
    from the output before it is stored) is not followed. The `append` line is read from the
    code of the functions on the stack when the pile is seen; a container filled elsewhere
    is reported at the line that made the tensors. Kept tensors seen between optimizer steps
    are reported when the run ends, unless a backward pass took them first.
    """

    code = "TL737"
    name = "memory-growth"
    summary = "Tensors carrying an autograd graph pile up from step to step: memory grows every iteration"
    severity = Severity.WARNING  # the program still runs, for a while


class CudaOutOfMemory(RuntimeRule):
    """
    ## What it does
    Explains a program that dies of `torch.OutOfMemoryError` (CUDA out of memory): the step
    and the module it was in, how much it tried to allocate, and what held the memory at
    that moment: the bytes autograd had saved for backward by user line and by module,
    parameters, gradients and optimizer state. With `torch.cuda.memory_allocated()` and the
    memory still free on the device. `--memory-history` also records torch's allocation
    stacks (`torch.cuda.memory._record_memory_history`) and lists the live allocations by
    the user line that made them. A CPU allocation failure (`DefaultCPUAllocator: can't
    allocate memory`) is explained the same way.

    ## Why is this bad?
    torch's message says how much memory was asked for and how much is in use, not what is
    using it: the usual causes (a batch too large for the model, activations kept from
    earlier steps, an evaluation run with grad on, a sequence length that grew) look the
    same from the message alone.

    ## Example
    ```python
    for x, y in loader:                       # x: [512, 3, 224, 224]
        loss = criterion(model(x), y)         # torch.OutOfMemoryError in model.layer3
    ```

    ## Use instead
    Reduce what the report names: a smaller batch (with gradient accumulation), activation
    checkpointing for the module that saves the most, `torch.no_grad()` for evaluation,
    `.item()`/`.detach()` on what the program keeps.

    ## Known limitations
    The saved-for-backward accounting covers the first `--memory-steps` iterations of each
    loop; a program that runs out of memory later is explained with those lines' per-step
    bytes, the module it failed in and the device's totals. Memory allocated outside
    autograd (a cache, a buffer the program grows) appears only in the totals, or by line
    with `--memory-history`.
    """

    code = "TL738"
    name = "cuda-out-of-memory"
    summary = "The program ran out of GPU memory; what held it, by user line and by module, and in which step"


@hookimpl
def torchlint_rules() -> list[type]:
    return [MemoryGrowth, CudaOutOfMemory]


@hookimpl
def torchlint_probes() -> list[type]:
    # Imports torch: called only in the child of `torchlint run`.
    from .probe import MemoryProbe

    return [MemoryProbe]


@hookimpl
def torchlint_run_options() -> list[Any]:
    import click

    return [
        click.Option(
            ["--memory-steps"], type=click.IntRange(1, 1000), default=DEFAULT_STEPS, show_default=True,
            help="Iterations of each loop the memory probe watches closely (saved-for-backward bytes by line and module, "
                 "graphs kept); more than --watch-steps stretches the run's watch window to cover them.",
        ),
        click.Option(
            ["--memory-history"], is_flag=True, default=False,
            help="On a GPU, record torch's allocation stacks so that running out of memory is explained by the lines that allocated.",
        ),
    ]


@hookimpl
def torchlint_run_section(name: str, result: dict[str, Any], cwd: Path) -> Any:
    if name != NAME:
        return None
    from .section import memory_section

    return memory_section(result, cwd)
