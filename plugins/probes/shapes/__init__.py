"""Shape-hazards probe: ops that run without error on a shape that makes their result constant.

The plugin: the probe's rules with their docs, and the probe class, imported only in the
child of `torchlint run` (this module must not import torch: `torchlint check` loads it).
"""

from __future__ import annotations

from torchlint.pluginmanager import hookimpl
from torchlint.probe import RuntimeRule


class SizeOneDimension(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the shapes probe) when a softmax, log-softmax, argmax or
    argmin (or `max`/`min` over a `dim`, whose indices are an argmax: `out.max(1)[1]`) runs
    over a dimension of size 1, or a cross-entropy or NLL loss gets one class:
    the op runs, and its result is the same whatever the input. Once per user line, with
    the shape the op got.

    ## Why is this bad?
    `softmax(x, dim=1)` of an `[N, 1]` output is 1 everywhere, `argmax(dim=1)` is 0
    everywhere, and `cross_entropy` over one class is a loss of exactly 0: the model learns
    nothing and its accuracy is whatever the share of class 0 is. Nothing raises. The usual
    cause is a binary classifier with one output unit given a multi-class head.

    A softmax or arg-reduction is reported where that dimension had size 1 at every call of
    the line: an attention's key axis, 1 at the first token generated from a one-token prompt
    and longer after it, is not.

    ## Example
    ```python
    model = nn.Sequential(nn.Linear(16, 1))
    loss = nn.CrossEntropyLoss()(model(x), y)
    ```

    ## Use instead
    ```python
    model = nn.Sequential(nn.Linear(16, 1))
    loss = nn.BCEWithLogitsLoss()(model(x).squeeze(1), y.float())
    ```
    """

    code = "TL733"
    name = "size-one-dimension"
    summary = "softmax/argmax over a dimension of size 1, or a cross-entropy over one class: a constant result"


@hookimpl
def torchlint_rules() -> list[type]:
    return [SizeOneDimension]


@hookimpl
def torchlint_probes() -> list[type]:
    from torchlint.plugins.probes.shapes.probe import PROBE

    return [PROBE]
