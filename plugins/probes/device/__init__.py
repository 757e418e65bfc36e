"""Device probe: confirms TL201 and reports runtime device mismatches (TL701).

The plugin: the probe's rules with their docs, and the probe class, imported only in the
child of `torchlint run` (this module must not import torch: `torchlint check` loads it).
"""

from __future__ import annotations

from torchlint.pluginmanager import hookimpl
from torchlint.probe import RuntimeRule


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

    ## Known limitations
    The creation line is known for tensors made while the probes watch (the first
    `--watch-steps` steps, 10 by default). A mismatch that happens only later (an evaluation
    after the first epoch) is reported as the crash at its line; `--watch-steps all` names
    the creation line there too.
    """

    code = "TL701"
    name = "runtime-device-mismatch"
    summary = "An operation mixed tensors on different devices at run time"


@hookimpl
def torchlint_rules() -> list[type]:
    return [RuntimeDeviceMismatch]


@hookimpl
def torchlint_probes() -> list[type]:
    from torchlint.plugins.probes.device.probe import PROBE

    return [PROBE]
