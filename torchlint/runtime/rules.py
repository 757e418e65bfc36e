"""The base of runtime-only rules (TL7xx), and the run's own three codes.

Runtime-only rules never match source code: ``torchlint run`` reports them from a probe's
evidence. Each probe's plugin registers its own through ``torchlint_rules``, so that
``torchlint rules`` lists them and ``torchlint rule TL730`` shows their documentation. They
are off for `torchlint check` and marked ``runtime_only``, so the static engine never parses
a file for them, even under ``--select ALL``.

The run itself owns only what no probe can say: the program crashed (TL702), timed out
(TL703), or a probe did (TL707).
"""

from __future__ import annotations

from torchlint.findings import Severity
from torchlint.rule import Rule

class RuntimeRule(Rule):
    default_enabled = False
    runtime_only = True
    severity = Severity.ERROR


class TargetCrashed(RuntimeRule):
    """
    ## What it does
    Reports that the program run by `torchlint run` raised an uncaught exception, exited
    with a non-zero status, or was killed by a signal (SIGABRT, SIGSEGV, ...), with the
    evidence the probes gathered before it stopped. Also reported, at the line that started
    them, when processes the program started itself (`multiprocessing.Process`,
    `torch.multiprocessing.spawn`) exited with an error while the main process finished:
    probes do not run in such processes, and under `--device fake-cuda` they see no simulated
    GPU (use `--device cpu`, or `--nproc-per-node N` for ranks). The run's summary names the
    processes the program started, failed or not; DataLoader workers are not counted.

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
    Reports that the program did not finish within `--timeout` seconds, at the user line it
    was running then, with the optimizer steps and forward calls it had made (exact, not the
    last progress report) and its user stack (`evidence.data.stack` in the JSON report). The
    clock starts when `torchlint run` starts, so torchlint's own start counts too; at the
    deadline the program prints where it was and its whole process group is killed. A
    program stuck in C code that holds the interpreter lock is placed from `faulthandler`'s
    dump instead. A program that finished but did not exit (a non-daemon thread still
    running) names the thread and its line.

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


#: The codes of the run itself; every probe's codes come with its plugin.
ENGINE_RUNTIME_RULES: dict[str, type[Rule]] = {rule.code: rule for rule in (TargetCrashed, TargetTimedOut, ProbeCrashed)}
