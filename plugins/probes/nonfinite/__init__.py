"""Non-finite probe: the first operation that turned finite values into NaN or Inf.

* TL735 forward: the operation whose output held NaN/Inf while its inputs were finite (a
  `log` of exact zeros, a division by a zero sum or std, `sqrt` of a negative, an `exp` or an
  fp16 result that overflows), named at the user's line with its inputs' ranges, once the
  NaN/Inf reached a loss or a model's output.
* TL736 backward: a gradient that became NaN/Inf while the forward values were finite
  (`sqrt` at 0, `x.pow(0.5)`, `torch.where` over a `log`), named at the forward
  line of the operation whose derivative did it, in the step it happened.

It confirms TL107 (`log(softmax(x))`) and TL509 (`log(sum(exp(x)))`) where their NaN/Inf
appears. The package stays importable without torch (`torchlint check` loads every plugin):
the probe itself is in ``probe`` and imported by ``torchlint_probes`` only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchlint.pluginmanager import hookimpl
from torchlint.probe import RuntimeRule

#: The probe's name, as `--disable-probe` and the JSON report know it.
PROBE_NAME = "nonfinite"


class NonfiniteForward(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the non-finite probe) at the line of the first operation
    whose output held NaN or Inf while all its inputs were finite, once those values reached
    a loss passed to `backward()` or a model's output: the operation, its inputs' ranges
    (which one held zeros for a division or a `log`, negatives for a `sqrt`), and the step.

    ## Why is this bad?
    One NaN spreads through the whole batch and, after one optimizer step, through every
    weight; the loss prints `nan` many lines and often many steps after the operation that
    made it, and nothing says which one. `torch.autograd.detect_anomaly` checks backward only
    and slows every step; this finds the forward operation at the cost of a few checks per
    step.

    ## Example
    ```python
    probs = torch.sigmoid(logits)          # exactly 0.0 where logits < -104
    loss = -(y * torch.log(probs) + (1 - y) * torch.log(1 - probs)).mean()
    ```

    ## Use instead
    ```python
    loss = F.binary_cross_entropy_with_logits(logits, y)
    ```
    Likewise `F.log_softmax` for `log(softmax(x))`, `torch.logsumexp` for
    `log(sum(exp(x)))`, and an `eps` (or `clamp_min`) in a division by a sum, a norm or a
    standard deviation that can be 0.

    ## Known limitations
    Values written on purpose are not reported: `-inf` or NaN from a literal
    (`masked_fill(mask, float("-inf"))`, `torch.full(..., float("inf"))`), a
    `torch.finfo(dtype).min` sentinel that overflows when added to, the `log` of a 0/1 mask,
    and NaN/Inf that the program removes (`torch.where`, `nan_to_num`) or checks for
    (`isfinite`) before a loss. A module that returns `-inf` is judged only if the `-inf`
    reaches a loss. An operation inside a module is found by running that model call once more
    with the same inputs, weights and random state (hooks off, buffers restored): a model
    whose forward changes its input in place, or depends on state outside its buffers, may
    not be replayed, and the finding then names no operation. Not under `--device meta`
    (no values).
    """

    code = "TL735"
    name = "nonfinite-forward"
    summary = "The first operation that made NaN/Inf out of finite inputs, with its inputs' ranges"


class NonfiniteGradient(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the non-finite probe) when a `backward()` of a finite loss
    made NaN/Inf gradients, at the forward line of the operation whose derivative is
    infinite or undefined at the values it had: `sqrt` at 0 (a distance or a norm written
    as `sqrt(sum(d ** 2))`, where two points coincide), `x.pow(0.5)` at 0, `acos` at ±1, a
    `log` or a division inside `torch.where` (the discarded branch still gets a gradient of
    0 · inf = NaN). Found in the same step, before the optimizer writes the NaN into the
    weights.

    ## Why is this bad?
    The forward pass looks fine, the loss is a number, and after one step every weight is
    NaN. The line to fix is in the forward pass, which no backward error names.

    ## Example
    ```python
    dist = ((a - b) ** 2).sum(dim=1).sqrt()   # a row where a == b: sqrt'(0) is infinite
    loss = F.relu(dist - margin).mean()
    ```

    ## Use instead
    ```python
    dist = torch.linalg.vector_norm(a - b, dim=1)  # its gradient at 0 is 0
    loss = F.relu(dist - margin).mean()
    ```
    or `(((a - b) ** 2).sum(dim=1) + 1e-12).sqrt()`.
    For `torch.where(x > 0, torch.log(x), 0)`, take the log of a safe value:
    `torch.where(x > 0, torch.log(x.clamp_min(1e-12)), 0)`.

    ## Known limitations
    Under `GradScaler`, NaN/Inf gradients from an overflow are what the scaler skips steps
    for: only a gradient with an operation to blame is reported. Checked after each
    `backward()` for the parameters of the models it ran and of the optimizers seen; at most
    three times per run. After the watched steps (`--watch-steps`, 10 by default) the
    gradients are read before each optimizer step instead, and only an operation inside a
    model call can be named (by replaying the call); one in the loss is reported with the
    `--watch-steps` that would name it.
    """

    code = "TL736"
    name = "nonfinite-gradient"
    summary = "A backward pass of a finite loss made NaN/Inf gradients: the forward op whose derivative did it"


RULES = [NonfiniteForward, NonfiniteGradient]


@hookimpl
def torchlint_rules() -> list[type]:
    return list(RULES)


@hookimpl
def torchlint_probes() -> list[type]:
    from .probe import NonfiniteProbe  # imports torch: only in `torchlint run`'s child

    return [NonfiniteProbe]


@hookimpl
def torchlint_run_section(name: str, result: dict, cwd: Path) -> Any:
    if name != PROBE_NAME:
        return None
    from .section import section

    return section(result, cwd)
