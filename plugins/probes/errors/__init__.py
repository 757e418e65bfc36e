"""Errors probe: when the program dies of a torch error that no static finding explains, say what helps, at the user's line, in place of the bare crash (TL702).

The plugin: the probe's rules with their docs, and the probe class, imported only in the
child of `torchlint run` (this module must not import torch: `torchlint check` loads it).
"""

from __future__ import annotations

from torchlint.pluginmanager import hookimpl
from torchlint.probe import RuntimeRule


class ShapeError(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` when the program dies of a shape error in a module
    (`mat1 and mat2 shapes cannot be multiplied`, `The size of tensor a (..) must match the
    size of tensor b`, `shape '[..]' is invalid for input of size ..`, a convolution given
    the wrong number of channels, an LSTM's `input.size(-1) must be equal to input_size`).
    In place of the bare crash (TL702), it names the module that failed by its path in the
    model, what that module is, and the shapes it was called with, at the user's line.

    ## Why is this bad?
    torch names the operation, not the layer: `mat1 and mat2 shapes cannot be multiplied
    (64x2048 and 512x10)` does not say which of a model's Linear layers was built for the
    wrong input size, nor what reached it.

    ## Example
    ```python
    self.features = nn.Sequential(nn.Conv2d(3, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
    self.classifier = nn.Linear(512, 10)   # the flattened features have 7200 values
    ```

    ## Use instead
    ```python
    self.classifier = nn.LazyLinear(10)    # or the in_features the report shows
    ```
    """

    code = "TL717"
    name = "shape-error"
    summary = "The program died of a shape error: which module, built for what, given which shapes"


class EmptyParameterList(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` when the program dies of `optimizer got an empty parameter
    list`. It names the models in reach of the failing line that hold no parameters, and
    why: a misspelled `__init__` (`__int__`, `_init_`), which Python never calls, so the
    layers are never built; or layers kept in a plain `list` or `dict`, which `nn.Module`
    does not register (use `nn.ModuleList`/`nn.ModuleDict`).

    ## Why is this bad?
    The error comes from the optimizer, far from its cause, and says nothing about the model.

    ## Example
    ```python
    class Net(nn.Module):
        def __int__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)
    ```

    ## Use instead
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)
    ```
    """

    code = "TL718"
    name = "empty-parameter-list"
    summary = "An optimizer got no parameters: the model's `__init__` is misspelled or its layers are unregistered"


@hookimpl
def torchlint_rules() -> list[type]:
    return [ShapeError, EmptyParameterList]


@hookimpl
def torchlint_probes() -> list[type]:
    from torchlint.plugins.probes.errors.probe import PROBE

    return [PROBE]
