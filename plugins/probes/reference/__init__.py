"""Reference probe: a known-good run recorded as a reference (`--save-reference`), and a run
checked against it (`--reference`): each relation that held at every recorded step of the
reference and breaks here is reported at the user line, with both values.

The plugin: the rules with their docs, the two options (checked here, in the parent: a
missing or broken reference file is a usage error before anything runs), and the report
section. The probe (``probe.py``, which imports torch) is imported only in the child of
`torchlint run`; ``store.py`` and ``relations.py`` import no torch.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from torchlint.findings import Severity
from torchlint.pluginmanager import hookimpl
from torchlint.probe import RuntimeRule

#: The probe's name: its summary's key in the JSON report, and `--disable-probe reference`.
NAME = "reference"

_HOW = """
    A relation is what held at every recorded step of the reference run (the first 8 optimizer
    steps, then every 10th), for the steps of one optimizer, and over at least 3 of them. Only
    facts that a new seed, data order or torch version does not move are related: which calls
    happen and in which order, zero or non-zero, finite or not, changed or not, dtypes,
    train/eval modes, all-zero or non-finite module outputs, the sign of the learning rate; never
    a value. A relation is reported once,
    at the first step that breaks it, and only for steps the reference recorded.
"""


class CallSequenceChanged(RuntimeRule):
    __doc__ = """
    ## What it does
    Reported by `torchlint run --reference good.json` when a call that the reference run made
    at every training step is missing here, or two calls come in the other order: an
    optimizer's `zero_grad()`, `backward()`, `clip_grad_norm_()`/`clip_grad_value_()`, a
    scheduler's `step()`, entering `autocast`, a model's `train()`/`eval()`, an optimizer's
    `step()`. A missing call is reported at the line of the step that lacked it, with the
    line where the reference made it; a call out of order at its own line.
""" + _HOW + """
    ## Why is this bad?
    Nothing raises when gradient clipping is dropped in a refactor, when `zero_grad()` moves
    after `backward()` (every gradient is cleared before the step) or when it disappears
    (gradients add up across steps): the run trains worse, or diverges later, and a loss
    curve looked at by eye rarely shows why.

    ## Example
    ```python
    loss.backward()
    optimizer.step()          # the reference clipped here: clip_grad_norm_ was lost
    ```

    ## Use instead
    ```python
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    ```
"""

    code = "TL760"
    name = "reference-call-sequence-changed"
    summary = "A call the reference run made at every training step is missing, or calls come in another order"


class ParameterUpdateChanged(RuntimeRule):
    __doc__ = """
    ## What it does
    Reported by `torchlint run --reference good.json` when parameters (named by their path in
    the model, `Net.fc.weight`) are updated differently from the reference: no optimizer (or
    another param group) holds a parameter the reference's optimizer updated; `requires_grad`
    flipped; a parameter that got a gradient at every step gets none, or an all-zero one, or a
    non-finite one; one that changed at every step does not change, or a frozen one that never
    changed does; a param group whose learning rate was above 0 at every step has 0. Parameters
    that break the same relation at the same step are one finding; a learning rate of 0 is
    reported instead of the parameters it leaves unchanged.
""" + _HOW + """
    ## Why is this bad?
    The model trains, the loss still falls a little, and part of it is silently not learning,
    or a layer meant to stay frozen drifts: an optimizer built over `model.encoder.parameters()`
    only, a `requires_grad_(True)` that unfreezes a pretrained backbone, a scheduler that ends
    at a learning rate of 0 after a config change.

    ## Example
    ```python
    optimizer = torch.optim.SGD(model.body.parameters(), lr=0.1)   # the head is never updated
    ```

    ## Use instead
    ```python
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ```
"""

    code = "TL761"
    name = "reference-parameter-update-changed"
    summary = "Parameters are updated differently from the reference run (optimizer, gradient, change, learning rate)"


class ModuleModeChanged(RuntimeRule):
    __doc__ = """
    ## What it does
    Reported by `torchlint run --reference good.json` when a model's training forward (a call
    with grad enabled) runs with a module in another mode than at every step of the reference:
    the model in eval mode where it trained in train mode, or a BatchNorm kept in eval mode that
    now trains. At the forward's line, with the last `train()`/`eval()` call on the model.
""" + _HOW + """
    ## Why is this bad?
    In eval mode, dropout is off and BatchNorm uses its running statistics and stops updating
    them: a model switched to `eval()` for a validation pass and never switched back trains on
    without regularisation and with frozen normalisation, and nothing raises.

    ## Example
    ```python
    for step, (x, y) in enumerate(loader):
        if step % 100 == 0:
            model.eval()
            validate(model)
        loss = criterion(model(x), y)
    ```

    ## Use instead
    ```python
        if step % 100 == 0:
            model.eval()
            validate(model)
            model.train()
    ```
"""

    code = "TL762"
    name = "reference-module-mode-changed"
    summary = "A module runs its training forward in another train/eval mode than in the reference run"


class DtypeChanged(RuntimeRule):
    __doc__ = """
    ## What it does
    Reported by `torchlint run --reference good.json` when parameters have another dtype than
    at every step of the reference, or a model's output under training has another dtype (an
    `autocast` region lost or changed: bfloat16 before, float32 now).
""" + _HOW + """
    ## Why is this bad?
    A model that trained in bfloat16 under autocast and now runs in float32 is slower and uses
    more memory; one whose parameters became float16 without a grad scaler loses small updates.
    Neither raises.

    ## Example
    ```python
    output = model(x)              # the reference ran this under torch.autocast("cuda", torch.bfloat16)
    ```

    ## Use instead
    ```python
    with torch.autocast("cuda", dtype=torch.bfloat16):
        output = model(x)
    ```
"""

    code = "TL763"
    name = "reference-dtype-changed"
    summary = "Parameters or a model's output have another dtype than in the reference run"


class LossCurveChanged(RuntimeRule):
    __doc__ = """
    ## What it does
    Reported by `torchlint run --reference good.json` when the loss (the tensor `backward()` is
    called on) is NaN or infinite at a step where the reference's was finite at every step, or
    when the reference's loss fell by 20 % or more over the steps both runs recorded (median of
    its first 3 recorded values against its last 3) and this run's did not fall at all. Loss
    values are never compared otherwise: a new seed or data order moves them.
""" + _HOW + """
    ## Why is this bad?
    A change that stops learning (a detached output, a wrong target, a learning rate far too
    small) leaves every call in place and every parameter moving; only the curve shows it.

    ## Example
    ```python
    loss = criterion(model(x).detach().requires_grad_(), y)
    ```

    ## Use instead
    ```python
    loss = criterion(model(x), y)
    ```
"""

    code = "TL764"
    name = "reference-loss-curve-changed"
    summary = "The loss is not finite, or does not fall where the reference run's fell"


class ActivationChanged(RuntimeRule):
    __doc__ = """
    ## What it does
    Reported by `torchlint run --reference good.json` when a module whose output was finite and
    not all zero at every training forward of the reference outputs all zeros, or NaN or inf,
    here: at the model's forward line, named by the first such module in the model's order
    (the modules after it only pass it on).
""" + _HOW + """
    ## Why is this bad?
    An all-zero activation passes no signal and no gradient: everything before it stops
    learning, and the loss still moves through the biases after it. A dropout probability typed
    as `1.0`, a mask built with the wrong comparison, a ReLU after a shift that pushes every
    value below zero all do this without an error.

    ## Example
    ```python
    self.drop = nn.Dropout(1.0)
    ```

    ## Use instead
    ```python
    self.drop = nn.Dropout(0.1)
    ```
"""

    code = "TL767"
    name = "reference-activation-changed"
    summary = "A module's output is all zero, or not finite, where the reference run's never was"


class ModelDiffers(RuntimeRule):
    """
    ## What it does
    Reported once by `torchlint run --reference good.json` when the model has parameters the
    reference's did not (a new layer), lacks some it had (renamed, removed) or has some of
    another shape under the same name (a wider layer), with their names. Their relations are
    not compared; every other parameter's are.

    ## Why is this bad?
    It may be the change the pull request is about: then record a new reference. It is reported
    so that a renamed layer does not silently drop out of the comparison.

    ## Example
    ```python
    self.proj = nn.Linear(64, 64)       # new in this branch
    ```

    ## Use instead
    Record the reference again on the main branch once the change is merged
    (`torchlint run train.py --save-reference good.json`).
    """

    code = "TL765"
    name = "reference-model-differs"
    summary = "The model has parameters the reference run's had not, lacks some, or has some of another shape (reported once)"
    severity = Severity.WARNING


class ReferenceOfAnotherProgram(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run --reference good.json` when fewer than half of the reference's
    parameters exist in this run under the same name and with the same shape (it was recorded
    from another program, or every layer was renamed), or when it recorded no optimizer step:
    nothing is compared, and the finding says what the reference was recorded from.

    ## Why is this bad?
    A CI job that checks against the wrong file would otherwise pass without checking anything.

    ## Example
    ```console
    $ torchlint run finetune.py --reference pretrain-reference.json
    ```

    ## Use instead
    ```console
    $ torchlint run finetune.py --save-reference finetune-reference.json   # on main
    $ torchlint run finetune.py --reference finetune-reference.json        # on each pull request
    ```
    """

    code = "TL766"
    name = "reference-of-another-program"
    summary = "The reference is not of this program (most of its parameters are not here): nothing was compared"


RULES = [CallSequenceChanged, ParameterUpdateChanged, ModuleModeChanged, DtypeChanged, LossCurveChanged, ModelDiffers,
         ReferenceOfAnotherProgram, ActivationChanged]


@hookimpl
def torchlint_rules() -> list[type]:
    return RULES


@hookimpl
def torchlint_probes() -> list[type]:
    # Imports torch: called only in the child of `torchlint run`.
    from .probe import ReferenceProbe

    return [ReferenceProbe]


def _readable_reference(ctx: Any, param: Any, value: str | None) -> str | None:
    """A reference that is missing, not JSON or not a reference is a usage error now, before
    the program runs for nothing."""
    if value is None:
        return None
    import click

    from .store import ReferenceError, load

    try:
        load(value)
    except ReferenceError as exc:
        raise click.BadParameter(str(exc)) from None
    return os.path.abspath(value)


def _writable_reference(ctx: Any, param: Any, value: str | None) -> str | None:
    if value is None:
        return None
    import click

    folder = os.path.dirname(os.path.abspath(value))
    if not os.path.isdir(folder):
        raise click.BadParameter(f"{value}: the folder {folder} does not exist")
    if os.path.isdir(value):
        raise click.BadParameter(f"{value} is a folder; give the reference file's name (good.json)")
    return os.path.abspath(value)


@hookimpl
def torchlint_run_options() -> list[Any]:
    import click

    return [
        click.Option(["--save-reference"], metavar="PATH", callback=_writable_reference,
                     help="Record this run's facts (calls, parameters, modes, dtypes, loss) per step as a JSON reference."),
        click.Option(["--reference"], metavar="PATH", callback=_readable_reference,
                     help="Check this run against a reference recorded with --save-reference (a known-good run)."),
    ]


@hookimpl
def torchlint_run_section(name: str, result: dict[str, Any], cwd: Path) -> Any:
    if name != NAME:
        return None
    from .section import reference_section

    return reference_section(result, cwd)
