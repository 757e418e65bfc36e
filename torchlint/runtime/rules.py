"""Codes for what only running shows (TL7xx), documented like any rule.

These rules never match source code: ``torchlint run`` reports them from runtime evidence.
They are registered through the probes plugin's ``torchlint_rules`` hook so that
``torchlint rules`` lists them and ``torchlint rule TL701`` shows their documentation.
They are off for `torchlint check` and marked ``runtime_only``, so the static engine never
parses a file for them, even under ``--select ALL``.
"""

from __future__ import annotations

from torchlint.findings import Severity
from torchlint.rule import Rule

class RuntimeRule(Rule):
    default_enabled = False
    runtime_only = True
    severity = Severity.ERROR


class RuntimeDeviceMismatch(RuntimeRule):
    """
    ## What it does
    Reports an operation that mixed tensors on different devices while the program ran,
    with the line of the operation and the line where the offending tensor was created.

    ## Why is this bad?
    PyTorch's own error names only the line that combines the tensors; the bug is usually
    where one of them was created without `device=` (often in `forward`, so it works on the
    CPU and fails on the first GPU run).

    ## Example
    ```python
    def forward(self, x):
        noise = torch.randn(x.shape)  # created on the CPU
        return x + noise              # x is on cuda:0
    ```

    ## Use instead
    ```python
    def forward(self, x):
        noise = torch.randn(x.shape, device=x.device)
        return x + noise
    ```
    Run `torchlint run train.py --device fake-cuda` to find these on a machine without a GPU.
    """

    code = "TL701"
    name = "runtime-device-mismatch"
    summary = "An operation mixed tensors on different devices at run time"


class TargetCrashed(RuntimeRule):
    """
    ## What it does
    Reports that the program run by `torchlint run` raised an uncaught exception, exited
    with a non-zero status, or was killed by a signal (SIGABRT, SIGSEGV, ...), with the
    evidence the probes gathered before it stopped.

    ## Why is this bad?
    Findings after the crash point could not be checked: they are reported as `not reached`.

    ## Example
    ```python
    loss = model(x)["logits"]  # KeyError
    ```

    ## Use instead
    Fix the error shown in the message (the last lines of the program's output are attached).
    """

    code = "TL702"
    name = "target-crashed"
    summary = "The program raised, exited with an error or died by a signal"


class TargetTimedOut(RuntimeRule):
    """
    ## What it does
    Reports that the program did not finish within `--timeout` seconds; its whole process
    group was killed.

    ## Why is this bad?
    A training script usually needs only a few steps to show its bugs: the rest of the run
    was not checked.

    ## Example
    ```python
    while True:
        train_one_epoch(model)
    ```

    ## Use instead
    Run it with `--steps N` to stop after N optimizer steps, or raise `--timeout`.
    """

    code = "TL703"
    name = "target-timed-out"
    summary = "The program did not finish within the timeout"


class RuntimeProbabilitiesIntoLoss(RuntimeRule):
    """
    ## What it does
    Reports softmax output (followed through views, indexing and `.to`) reaching
    `cross_entropy` or `nll_loss` at run time where no static finding explains it, backed by a
    check that the values are rows in [0, 1] summing to 1.

    ## Why is this bad?
    `cross_entropy` applies `log_softmax` itself and `nll_loss` expects log-probabilities:
    probabilities train slowly or not at all, without any error.

    ## Example
    ```python
    loss = F.cross_entropy(logits.softmax(1), y)
    ```

    ## Use instead
    ```python
    loss = F.cross_entropy(logits, y)
    ```
    """

    code = "TL704"
    name = "runtime-probabilities-into-loss"
    summary = "Softmax output reached cross_entropy or nll_loss at run time"


class RuntimeInplaceOnSavedTensor(RuntimeRule):
    """
    ## What it does
    Reports an in-place operation, at the line that performs it, on a tensor that autograd
    saved for the backward pass, or on a leaf tensor that requires grad, where no static
    finding explains it.

    ## Why is this bad?
    Backward fails with "one of the variables needed for gradient computation has been
    modified by an inplace operation", and `detect_anomaly` points at the op that saved the
    tensor, not at the line that changed it.

    ## Example
    ```python
    h = torch.sigmoid(x)
    h += 1
    ```

    ## Use instead
    ```python
    h = torch.sigmoid(x)
    h = h + 1
    ```
    """

    code = "TL705"
    name = "runtime-inplace-on-saved-tensor"
    summary = "An in-place operation changed a tensor autograd needs, at run time"


class RuntimeCudaCheckpointLoad(RuntimeRule):
    """
    ## What it does
    Reports a `torch.load` without `map_location` that read a checkpoint holding CUDA
    storages, where no static finding explains it (e.g. the call is wrapped).

    ## Why is this bad?
    The same call fails on a machine without a GPU ("Attempting to deserialize object on a
    CUDA device").

    ## Example
    ```python
    state = load_fn(path)  # a wrapper around torch.load(path)
    ```

    ## Use instead
    ```python
    state = torch.load(path, map_location="cpu")
    ```
    """

    code = "TL706"
    name = "runtime-cuda-checkpoint-load"
    summary = "A checkpoint holding CUDA storages was loaded without map_location"


class ProbeCrashed(RuntimeRule):
    """
    ## What it does
    Reports that a runtime probe raised an exception of its own. The probe is switched off
    for the rest of the run; the program and the other probes go on.

    ## Why is this bad?
    It is a bug in torchlint or in a third-party probe: please report it.

    ## Example
    ```python
    # nothing in your code: the message names the probe and its error
    ```

    ## Use instead
    Report the message to the probe's authors.
    """

    code = "TL707"
    name = "probe-crashed"
    summary = "A runtime probe raised an exception and was switched off"


RUNTIME_RULES: dict[str, type[Rule]] = {
    rule.code: rule
    for rule in (
        RuntimeDeviceMismatch,
        TargetCrashed,
        TargetTimedOut,
        RuntimeProbabilitiesIntoLoss,
        RuntimeInplaceOnSavedTensor,
        RuntimeCudaCheckpointLoad,
        ProbeCrashed,
    )
}
