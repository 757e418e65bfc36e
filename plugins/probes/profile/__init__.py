"""Profile probe (``torchlint run --profile``): hot paths by user line and module, FLOPs, TL712.

The plugin: the probe's rules with their docs, and the probe class, imported only in the
child of `torchlint run` (this module must not import torch: `torchlint check` loads it).
"""

from __future__ import annotations

from pathlib import Path

from torchlint.findings import Severity
from torchlint.pluginmanager import hookimpl
from torchlint.probe import RuntimeRule


class HotSpot(RuntimeRule):
    """
    ## What it does
    With `torchlint run --profile`, reports the user line that took the largest share of the
    profiled steps (forward plus the backward of its operations), when it took at least 30 %,
    with its time per step, the operations it ran and their input shapes.

    ## Why is this bad?
    It is information, not a bug: the place to look first when the step is slow.

    ## Example
    ```python
    dist = torch.cdist(x, self.centroids)   # 70 % of the step
    ```

    ## Use instead
    Whatever makes that line cheaper; the report's trace.json shows it in Perfetto.
    """

    code = "TL712"
    name = "hot-spot"
    summary = "One line took the largest share of the profiled training steps"
    severity = Severity.INFO


@hookimpl
def torchlint_rules() -> list[type]:
    return [HotSpot]


@hookimpl
def torchlint_run_options() -> list:
    import click

    return [
        click.Option(["--profile"], is_flag=True, help="Profile the training loop: hot user lines and modules, time split, "
                     "FLOPs per module."),
        click.Option(["--profile-steps"], type=click.IntRange(min=1), default=5, show_default=True,
                     help="Steps to profile (after one warm-up step)."),
    ]


@hookimpl
def torchlint_run_section(name: str, result: dict, cwd: Path):
    if name != "profile":
        return None
    from torchlint.plugins.probes.profile.section import section

    return section(result, cwd)


@hookimpl
def torchlint_probes() -> list[type]:
    from torchlint.plugins.probes.profile.probe import PROBE

    return [PROBE]
