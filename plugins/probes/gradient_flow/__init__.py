"""Gradient-flow probe: the training bugs that never raise, read at the first optimizer steps.

The plugin: the probe's rules with their docs, and the probe class, imported only in the
child of `torchlint run` (this module must not import torch: `torchlint check` loads it).
"""

from __future__ import annotations

from torchlint.findings import Severity
from torchlint.pluginmanager import hookimpl
from torchlint.probe import RuntimeRule


class ParameterWithoutGradient(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the gradient-flow probe) when trainable parameters the
    optimizer updates get no gradient, or an all-zero one, at each of the first three
    optimizer steps. They are named by their path in the model (`Net.head.weight`), at the
    line that steps.

    ## Why is this bad?
    Nothing raises: the optimizer skips them and the model trains without them. The usual
    causes are a layer built in `__init__` but never used in `forward`, a graph cut by
    `.detach()`, `.item()` or `torch.tensor(x)`, and `optimizer.zero_grad()` placed between
    `loss.backward()` and `optimizer.step()`, which clears every gradient before the step.

    A bias whose gradient is exactly zero while a weight of its own layer gets one is not
    counted: the gradient reaches that layer, and the bias's share cancels over the batch
    because the loss does not change when the layer's output shifts by a constant (the last
    bias of a WGAN critic trained on `-mean(real) + mean(fake)`).

    ## Example
    ```python
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
    ```

    ## Use instead
    ```python
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    ```
    """

    code = "TL730"
    name = "parameter-without-gradient"
    summary = "Trainable parameters got no gradient at any of the first steps: unused layers or a cut graph"


class ParameterNotUpdated(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the gradient-flow probe) when parameters that have a
    gradient keep exactly their values through each of the first three optimizer steps.

    ## Why is this bad?
    The model does not learn and nothing says so: a learning rate of 0 (a scheduler that
    starts at 0, `lr=args.lr` with the argument unset), or a param group frozen by hand.

    ## Example
    ```python
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    ```

    ## Use instead
    ```python
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    ```
    """

    code = "TL731"
    name = "parameter-not-updated"
    summary = "Parameters with a gradient kept their values through the first optimizer steps"


class LossNotChanging(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the gradient-flow probe) when the value of the loss that
    `backward()` is called on is exactly the same at each of the first three steps.

    ## Why is this bad?
    The optimizer's updates never reach the loss: the parameters it updates get no
    gradient, the learning rate is 0, or the loss does not depend on the model (a detached
    output, a constant target compared with itself).

    ## Example
    ```python
    loss = criterion(model(x).detach().requires_grad_(), y)
    ```

    ## Use instead
    ```python
    loss = criterion(model(x), y)
    ```
    """

    code = "TL732"
    name = "loss-not-changing"
    summary = "The loss has exactly the same value at each of the first steps"


class VanishingGradient(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the gradient-flow probe) when, at each of the first optimizer
    steps, some layers get a gradient that, relative to their weights (`|grad| / |weight|`), is
    a millionth or less of what the fastest-learning layer gets. Named by their path in the
    model, with the share each gets. Embedding layers are left out: only the rows of the batch's
    tokens get a gradient, so theirs is small in any healthy model.

    ## Why is this bad?
    Those layers do not learn: their updates are a millionth of the others'. The loss still
    goes down a little (the last layers learn), so nothing looks wrong. The usual cause is
    many saturating activations (`sigmoid`, `tanh`) stacked without normalisation or residual
    connections: each multiplies the gradient by at most 0.25 on its way back.

    ## Example
    ```python
    layers = []
    for _ in range(12):
        layers += [nn.Linear(64, 64), nn.Sigmoid()]
    model = nn.Sequential(*layers, nn.Linear(64, 10))
    ```

    ## Use instead
    ```python
    for _ in range(12):
        layers += [nn.Linear(64, 64), nn.LayerNorm(64), nn.ReLU()]
    ```

    ## Known limitations
    Read at the first three steps only; a gradient that vanishes later in training is not seen.
    One starved layer alone is not reported: a single large free parameter (a bank of
    prototypes, a big embedding-like table) has a small gradient relative to its weights
    without anything vanishing on the way back. Vanishing shows in several layers at once.
    """

    code = "TL742"
    name = "vanishing-gradient"
    summary = "Some layers get a millionth of the gradient the others get, at every step"
    severity = Severity.WARNING


class ExplodingGradient(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the gradient-flow probe) when the norm of all gradients grows
    tenfold or more from each of the first optimizer steps to the next, with the norms.

    ## Why is this bad?
    Each update overshoots and makes the next gradient larger: within a few more steps the
    weights and the loss are `inf` or `NaN`. The usual cause is a learning rate too high for
    the scale of the inputs or targets (unnormalised features, targets in the thousands).

    ## Example
    ```python
    x = torch.rand(256, 8) * 100            # raw features
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ```

    ## Use instead
    ```python
    x = (x - x.mean(0)) / x.std(0)          # or a smaller learning rate
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    ```

    ## Known limitations
    Gradients clipped before the step are seen clipped, so a clipped run is not reported.
    """

    code = "TL743"
    name = "exploding-gradient"
    summary = "The gradient norm grows tenfold or more at every step"


@hookimpl
def torchlint_rules() -> list[type]:
    return [ParameterWithoutGradient, ParameterNotUpdated, LossNotChanging, VanishingGradient, ExplodingGradient]


@hookimpl
def torchlint_probes() -> list[type]:
    from torchlint.plugins.probes.gradient_flow.probe import PROBE

    return [PROBE]
