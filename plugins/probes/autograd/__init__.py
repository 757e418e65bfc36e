"""Autograd probe: confirms TL103 at the line that edits a tensor in place.

The plugin: the probe's rules with their docs, and the probe class, imported only in the
child of `torchlint run` (this module must not import torch: `torchlint check` loads it).
"""

from __future__ import annotations

from torchlint.pluginmanager import hookimpl
from torchlint.probe import RuntimeRule


class RuntimeInplaceOnSavedTensor(RuntimeRule):
    """
    ## What it does
    Reports an in-place operation, at the line that performs it, on a tensor that autograd
    saved for the backward pass (once a backward pass needs that tensor: a graph nobody runs
    backward through is left alone), or on a leaf tensor that requires grad, where no static
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


@hookimpl
def torchlint_rules() -> list[type]:
    return [RuntimeInplaceOnSavedTensor]


@hookimpl
def torchlint_probes() -> list[type]:
    from torchlint.plugins.probes.autograd.probe import PROBE

    return [PROBE]
