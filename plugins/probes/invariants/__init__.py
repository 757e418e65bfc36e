"""Invariants probe: what a healthy training run keeps true at every step, checked without a
reference run.

* TL744 a parameter gets gradients but no optimizer holds it (the optimizer was built over
  the frozen part of the model, or before a layer was replaced).
* TL745 gradients are not cleared between optimizer steps: each step adds the last one's.
* TL746 a parameter with ``requires_grad=False`` changed in an optimizer step (a stale
  gradient from before it was frozen keeps momentum or weight decay moving it).
* TL747 an optimizer steps a model that is in ``eval()`` mode.
* TL748 dropout runs in a module that is in ``eval()`` mode (``F.dropout`` without
  ``training=self.training``): evaluation is random.
* TL749 a spectral-normalised layer is evaluated before it ever ran in training mode.
* TL750 DataLoader workers each start from the same copy of a random generator the dataset
  holds: every worker (and every epoch) draws the same augmentations.
* TL751 an initialisation overwrote weights a ``load_state_dict`` loaded.
* TL752 parameters that learned at first stop getting gradients, or stop changing, later in
  the run (a ReLU layer that died, a schedule that drops the learning rate to 0).
* TL753 the model's output is the same for every sample while the targets differ: it
  predicts a constant (saturated sigmoids, dead ReLUs); the loss sits on a plateau.
* TL754 a training forward's matrix products ran in float32 outside the autocast region its
  step enters (an autocast block that wraps only the loss).
* TL756 the settings call a part of the model frozen (``freeze_encoder=True``) and the
  optimizer trains it: the freeze method was never called.

The optimizer checks read sampled steps (every step at first, then every few), so a bug that
starts after the first steps is seen and the run stays fast. The package stays importable
without torch: the probes are imported by ``torchlint_probes`` only.
"""

from __future__ import annotations

from torchlint.findings import Severity
from torchlint.pluginmanager import hookimpl
from torchlint.probe import RuntimeRule


class GradientOutsideOptimizer(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the invariants probe) when parameters of a model get
    gradients at the optimizer steps, but no optimizer of the run holds them. Named by their
    path in the model, at the line that steps; when an optimizer holds only parameters with
    `requires_grad=False`, the message says so.

    ## Why is this bad?
    Those layers never learn, and nothing raises: backward computes their gradients and the
    optimizer never reads them. The usual causes are an optimizer built over the frozen part
    of a model (`model.backbone.parameters()` instead of the head's), and a layer replaced
    after the optimizer was built (`model.fc = nn.Linear(...)` for a new number of classes):
    the optimizer still holds the old layer's tensors.

    ## Example
    ```python
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.fc = nn.Linear(512, 10)          # a new tensor the optimizer never saw
    ```

    ## Use instead
    ```python
    model.fc = nn.Linear(512, 10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ```
    """

    code = "TL744"
    name = "gradient-outside-optimizer"
    summary = "Parameters get gradients but no optimizer holds them: they never learn"


class GradientsNotCleared(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the invariants probe) when the gradients an optimizer step
    used are still in `.grad` when the next backward pass adds to them, and are stepped on
    again: nothing cleared them between the two steps. Checked at sampled steps of the whole
    run, for each optimizer on its own parameters.

    ## Why is this bad?
    Each step applies the sum of every gradient so far: the updates grow step after step and
    the model trains on stale directions. Nothing raises. Gradient accumulation is not this:
    several backward passes between one step and the next, with the gradients cleared after
    each step, are left alone. A `zero_grad()` called on another optimizer or model than the
    one that steps is this bug.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```
    """

    code = "TL745"
    name = "gradients-not-cleared"
    summary = "Gradients are not cleared between optimizer steps: each step adds the previous ones"
    #: The static rule for the same bug: a TL602 finding at the stepping line is confirmed by
    #: this evidence rather than reported beside it.
    proves = ("TL602",)


class FrozenParameterChanged(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the invariants probe) when a parameter with
    `requires_grad=False`, held by an optimizer, changed in one of its steps.

    ## Why is this bad?
    Freezing a layer after training started (`requires_grad_(False)`) leaves its last
    gradient in `.grad`; optimizers skip only parameters whose `.grad` is None, so momentum
    and weight decay keep moving the "frozen" weights with that stale gradient at every step.

    ## Example
    ```python
    for p in model.backbone.parameters():
        p.requires_grad_(False)
    ```

    ## Use instead
    ```python
    for p in model.backbone.parameters():
        p.requires_grad_(False)
        p.grad = None
    ```
    """

    code = "TL746"
    name = "frozen-parameter-changed"
    summary = "A parameter with requires_grad=False changed in an optimizer step"


class TrainingInEvalMode(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the invariants probe) when an optimizer steps the
    parameters of a model that is in `eval()` mode and holds layers that behave differently
    in training (dropout, batch normalisation).

    ## Why is this bad?
    An evaluation function calls `model.eval()`; the training loop that follows never calls
    `model.train()` again. From then on dropout is off and batch normalisation uses its
    frozen running statistics: the model trains on, without regularisation and with the
    wrong normalisation, and nothing raises.

    ## Example
    ```python
    for epoch in range(epochs):
        for x, y in loader:
            ...
            optimizer.step()
        evaluate(model)          # calls model.eval()
    ```

    ## Use instead
    ```python
    for epoch in range(epochs):
        model.train()
        for x, y in loader:
            ...
    ```
    """

    code = "TL747"
    name = "training-in-eval-mode"
    summary = "An optimizer steps a model in eval() mode: dropout off, frozen normalisation statistics"


class DropoutInEvalMode(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the invariants probe) at the line of a functional dropout
    (`F.dropout(x, p)`) that ran with `training=True` inside a module that is in `eval()`
    mode.

    ## Why is this bad?
    `F.dropout`'s `training` argument defaults to `True`: it does not follow the module's
    mode. In evaluation the model still drops activations at random: the same input gives a
    different output each time, and the metrics are those of a noisier model.

    ## Example
    ```python
    def forward(self, x):
        return self.fc(F.dropout(x, 0.5))
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return self.fc(F.dropout(x, 0.5, training=self.training))
    ```
    """

    code = "TL748"
    name = "dropout-in-eval-mode"
    summary = "Dropout ran with training=True inside a module in eval() mode: evaluation is random"


class SpectralNormEvaluatedUntrained(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the invariants probe) when a layer wrapped with
    `torch.nn.utils.spectral_norm` runs in `eval()` mode before it has ever run in training
    mode (and without a loaded state).

    ## Why is this bad?
    `spectral_norm` estimates the weight's largest singular value by power iteration, one
    step per training-mode forward, starting from random vectors. In eval mode it reuses
    the estimate without iterating: before any training forward, that estimate is from the
    random start and the weight is divided by the wrong value.

    ## Example
    ```python
    model = Net()                     # spectral_norm layers
    model.eval()
    baseline = evaluate(model)
    ```

    ## Use instead
    ```python
    # torch.nn.utils.parametrizations.spectral_norm runs 15 power iterations when applied
    layer = torch.nn.utils.parametrizations.spectral_norm(nn.Linear(8, 8))
    ```
    """

    code = "TL749"
    name = "spectral-norm-evaluated-untrained"
    summary = "A spectral_norm layer ran in eval() mode before any training-mode forward"


class WorkersShareRandomState(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the invariants probe) when a DataLoader with worker
    processes iterates a dataset that holds its own random generator (`numpy`'s
    `default_rng`/`RandomState`, `random.Random`, a `torch.Generator`), and no
    `worker_init_fn` is given.

    ## Why is this bad?
    Each worker gets a copy of the dataset, generator state included: every worker draws the
    same random numbers, so the batches they make share the same augmentations. Without
    `persistent_workers`, each epoch starts again from the same copy. torch reseeds the
    global generators of `random`, numpy and torch in each worker, but not a generator the
    dataset holds.

    ## Example
    ```python
    class Noisy(Dataset):
        def __init__(self):
            self.rng = np.random.default_rng(0)
    ```

    ## Use instead
    ```python
    def reseed(worker_id):
        info = torch.utils.data.get_worker_info()
        info.dataset.rng = np.random.default_rng(info.seed)

    DataLoader(Noisy(), num_workers=4, worker_init_fn=reseed)
    ```
    """

    code = "TL750"
    name = "workers-share-random-state"
    summary = "DataLoader workers each copy the dataset's random generator: identical augmentations"
    severity = Severity.WARNING


class InitialisationOverwritten(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the invariants probe) when a `torch.nn.init` function (or a
    layer's `reset_parameters()`) writes a parameter that `load_state_dict` loaded, before the
    first optimizer step: once per initialising line, naming the line that loaded.

    ## Why is this bad?
    A re-initialisation after loading throws the pretrained weights away: the run trains
    from scratch, and nothing raises. The loss curve looks like any first run.

    A second initialisation of a parameter that was never loaded is not reported: a generic
    `model.apply(init_weights)` followed by a special one for some layers (GPT-2's scaled
    initialisation of its residual projections) is deliberate.

    ## Example
    ```python
    model.load_state_dict(torch.load("pretrained.pt"))
    model.apply(init_weights)
    ```

    ## Use instead
    ```python
    model.apply(init_weights)
    model.load_state_dict(torch.load("pretrained.pt"))
    ```
    """

    code = "TL751"
    name = "initialisation-overwritten"
    summary = "An initialisation overwrote weights that load_state_dict had loaded"


class TrainingStalled(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the invariants probe) when parameters that got gradients and
    changed at the first steps later get only all-zero gradients, or stop changing, at every
    step the probe reads from some step on. Named by their path in the model, with the step.

    ## Why is this bad?
    The run goes on, the loss stops improving, and nothing raises. The usual causes: ReLU
    units that all died (a large update pushed every pre-activation below zero), a schedule
    that drops the learning rate to 0 (`MultiStepLR(..., gamma=0)`), an optimizer step that
    stops applying updates.

    ## Example
    ```python
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[4], gamma=0.0)
    ```

    ## Use instead
    ```python
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[4], gamma=0.1)
    ```

    ## Known limitations
    Steps are read at a sample (every step up to the eighth, then every eighth): a stall
    shorter than three read steps is not reported.
    """

    code = "TL752"
    name = "training-stalled"
    summary = "Parameters that learned at first get no gradient, or stop changing, later in the run"


class ConstantModelOutput(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the invariants probe) at a loss line when, at three calls in
    a row in the watched steps, the model's prediction is the same for every sample of the
    batch (to a relative 1e-4) while the targets differ.

    ## Why is this bad?
    The model predicts a constant: the mean of the targets, or one class. The loss sits on a
    plateau that is flat but not exactly constant, so it looks like slow training. The usual
    causes are saturating activations stacked deep (each sigmoid squeezes the differences
    between samples), ReLU layers whose units all died, or an input that never reaches the
    output (a `detach()`, a multiplication by a zero mask).

    ## Example
    ```python
    layers = [nn.Linear(16, 16), nn.Sigmoid()] * 6
    model = nn.Sequential(*layers, nn.Linear(16, 1), nn.Sigmoid())
    ```

    ## Use instead
    ```python
    model = nn.Sequential(nn.Linear(16, 16), nn.LayerNorm(16), nn.ReLU(), nn.Linear(16, 1))
    ```
    """

    code = "TL753"
    name = "constant-model-output"
    summary = "The model's output is the same for every sample while the targets differ: it predicts a constant"


class ForwardOutsideAutocast(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the invariants probe) at the line of a matrix product
    (`linear`, `matmul`, a convolution) that ran in float32 with gradients on, outside any
    autocast region, in a training step that enters an enabled `torch.autocast` region or
    scales its loss with an enabled `GradScaler` (not one built with `enabled=False`, nor a
    CUDA scaler that disabled itself because CUDA is not available).

    ## Why is this bad?
    The run pays for mixed precision and gets none of it: the model's forward runs in
    float32, and the autocast block wraps only the loss, which is computed from its float32
    output. Nothing raises; the step is as slow and as memory-hungry as without autocast. The
    same happens when the forward runs in another thread, such as `nn.DataParallel`'s
    replicas: autocast state is per thread. A block entered with `enabled=False` is a
    deliberate float32 region and is not reported.

    ## Example
    ```python
    out = model(x)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = criterion(out, y)
    ```

    ## Use instead
    ```python
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = model(x)
        loss = criterion(out, y)
    ```
    """

    code = "TL754"
    name = "forward-outside-autocast"
    summary = "A training forward ran in float32 outside the autocast region its step enters"


class FreezeNotApplied(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the invariants probe) at the first optimizer step when the
    script's settings in reach (an `argparse.Namespace`, a dataclass, a `...Config` object, a
    dict) hold `freeze_<part>=True` (or `<part>_frozen=True`), a model in reach has a
    submodule named `<part>`, and every parameter of it requires grad while the optimizer
    updates them.

    ## Why is this bad?
    The stage meant to stay fixed trains with the rest: a pretrained encoder drifts from its
    weights, the run is slower, and the results no longer match the configuration that was
    reported. Nothing raises. The usual cause is a freeze method that is defined but never
    called, or called on another object (a copy of the model).

    ## Example
    ```python
    if args.freeze_encoder:
        model.freeze_encoder            # the method is named, not called
    ```

    ## Use instead
    ```python
    if args.freeze_encoder:
        model.freeze_encoder()
    ```
    """

    code = "TL756"
    name = "freeze-not-applied"
    summary = "The settings call a part of the model frozen, and the optimizer trains it"


RULES = [
    GradientOutsideOptimizer, GradientsNotCleared, FrozenParameterChanged, TrainingInEvalMode, DropoutInEvalMode,
    SpectralNormEvaluatedUntrained, WorkersShareRandomState, InitialisationOverwritten, TrainingStalled,
    ConstantModelOutput, ForwardOutsideAutocast, FreezeNotApplied,
]


@hookimpl
def torchlint_rules() -> list[type]:
    return list(RULES)


@hookimpl
def torchlint_probes() -> list[type]:
    from torchlint.plugins.probes.invariants.autocast import AutocastProbe
    from torchlint.plugins.probes.invariants.initialisation import InitialisationProbe
    from torchlint.plugins.probes.invariants.modes import ModeProbe
    from torchlint.plugins.probes.invariants.optimizers import OptimizerInvariantsProbe
    from torchlint.plugins.probes.invariants.outputs import ConstantOutputProbe
    from torchlint.plugins.probes.invariants.workers import WorkerRandomStateProbe

    return [OptimizerInvariantsProbe, ModeProbe, InitialisationProbe, WorkerRandomStateProbe, ConstantOutputProbe,
            AutocastProbe]
