"""Syncs probe: host-device synchronisations repeated within each training step.

The plugin: the probe's rules with their docs, and the probe class, imported only in the
child of `torchlint run` (this module must not import torch: `torchlint check` loads it).
"""

from __future__ import annotations

from torchlint.findings import Severity
from torchlint.pluginmanager import hookimpl
from torchlint.probe import RuntimeRule


class RepeatedHostSync(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run --device fake-cuda` (the syncs probe) for a line that
    synchronises the host with the GPU more than once per optimizer step: `.item()`,
    `.cpu()`, `.tolist()`, `.numpy()`, `bool(t)` or printing a tensor inside a per-sample
    loop, or a metric computed element by element. One sync per step (`loss.item()` for
    logging) is the norm and is not reported.

    ## Why is this bad?
    A sync waits until every kernel queued on the GPU has run. Inside a loop it stalls the
    GPU once per element while Python catches up: the step takes as long as the loop, and
    the GPU sits idle.

    ## Example
    ```python
    for i in range(len(target)):
        correct += (predicted[i] == target[i]).item()
    ```

    ## Use instead
    ```python
    correct += (predicted == target).sum()   # a tensor: read it once, after the epoch
    ```

    ## Known limitations
    The steps counted are those the probes watch (`--watch-steps`, 10 by default): a line
    that syncs in every one of them is reported.
    """

    code = "TL734"
    name = "repeated-host-sync"
    summary = "A line synchronises the host with the GPU more than once per optimizer step"
    severity = Severity.INFO


@hookimpl
def torchlint_rules() -> list[type]:
    return [RepeatedHostSync]


@hookimpl
def torchlint_probes() -> list[type]:
    from torchlint.plugins.probes.syncs.probe import PROBE

    return [PROBE]
