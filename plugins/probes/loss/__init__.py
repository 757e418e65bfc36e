"""Loss probe: confirms TL101 (softmax into cross_entropy) and TL102 (into nll_loss).

The plugin: the probe's rules with their docs, and the probe class, imported only in the
child of `torchlint run` (this module must not import torch: `torchlint check` loads it).
"""

from __future__ import annotations

from torchlint.pluginmanager import hookimpl
from torchlint.probe import RuntimeRule


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


@hookimpl
def torchlint_rules() -> list[type]:
    return [RuntimeProbabilitiesIntoLoss]


@hookimpl
def torchlint_probes() -> list[type]:
    from torchlint.plugins.probes.loss.probe import PROBE

    return [PROBE]
