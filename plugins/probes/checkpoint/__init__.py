"""Checkpoint probe: confirms TL301 by reading where a checkpoint's storages live.

The plugin: the probe's rules with their docs, and the probe class, imported only in the
child of `torchlint run` (this module must not import torch: `torchlint check` loads it).
"""

from __future__ import annotations

from torchlint.pluginmanager import hookimpl
from torchlint.probe import RuntimeRule


class RuntimeCudaCheckpointLoad(RuntimeRule):
    """
    ## What it does
    Reports a `torch.load` without `map_location` that read a checkpoint holding CUDA
    storages, where no static finding explains it (e.g. the call is wrapped). A file the
    same run saved (a best model saved while training and loaded back at the end) is left
    alone, as TL301 leaves such a round trip alone: the load works wherever the save did.

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


@hookimpl
def torchlint_rules() -> list[type]:
    return [RuntimeCudaCheckpointLoad]


@hookimpl
def torchlint_probes() -> list[type]:
    from torchlint.plugins.probes.checkpoint.probe import PROBE

    return [PROBE]
