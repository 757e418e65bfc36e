"""Broadcast probe: losses and metrics that broadcast a prediction against a target.

* TL739 an elementwise op or comparison that broadcasts an `[N]` tensor against an `[N, 1]`
  one (or `[N, 1]` against `[1, N]`) into `[N, N]`, whose result then reaches a reduction
  (`mean`, `sum`, ...) or a loss: a hand-written MSE or an accuracy that compares every
  prediction with every target. Pairwise matrices built on purpose are left alone.
* TL740 a loss that torch accepts without error or warning although its target does not
  fit its input: a loss that broadcasts input and target of different shapes silently
  (`poisson_nll_loss`, `kl_div`, `gaussian_nll_loss`, `hinge_embedding_loss`,
  `multilabel_soft_margin_loss` in torch 2.13; the ones that warn are TL716), and a
  `cross_entropy` given float class-probability targets that are no probabilities.

This module is torch-free (the static `torchlint check` imports every plugin); the probe
itself is in `.probe`, imported when `torchlint run` asks for it.
"""

from __future__ import annotations

from torchlint.findings import Severity
from torchlint.pluginmanager import hookimpl
from torchlint.probe import RuntimeRule


class BroadcastToSquare(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the broadcast probe) when an elementwise operation or a
    comparison broadcasts two tensors with the same elements in different layouts, an `[N]`
    and an `[N, 1]` (or an `[N, 1]` and a `[1, N]`), into an `[N, N]` result that then reaches
    a reduction (`mean`, `sum`, `norm`, ...) or a loss. It is reported at the line of the
    operation, with both shapes, the shape of the result and the line that reduced it.

    The operands must come from different tensors, and neither may have got its size-1
    dimension from an explicit `unsqueeze`, `[:, None]`, `view`/`reshape` or `expand` on the
    line itself: `x[:, None] - x[None, :]`, `a.unsqueeze(1) * b` and other pairwise matrices
    built on purpose are not reported. An `[N, 1]` against a `[1, N]` is reported only when
    neither got its size-1 dimension from such an op on any line (an outer product written
    over several lines is left alone).

    ## Why is this bad?
    A model with one output unit returns `[N, 1]`; the targets of a batch are `[N]`.
    `((pred - y) ** 2).mean()` is then the mean over all N² pairs of every prediction and
    every target: the loss is a number, it goes down a little, and the model learns to
    predict the mean target. An accuracy `(pred == y).sum() / N` counts matches among N²
    pairs and can exceed 1. Nothing raises or warns (torch's own regression losses warn,
    which is TL716; a loss written by hand does not).

    ## Example
    ```python
    pred = model(x)                           # [N, 1]
    loss = ((pred - y) ** 2).mean()           # y: [N] -> an [N, N] difference
    correct = (pred.argmax(1, keepdim=True) == y).sum()
    ```

    ## Use instead
    ```python
    pred = model(x).squeeze(-1)               # [N]
    loss = ((pred - y) ** 2).mean()
    correct = (logits.argmax(1) == y).sum()
    ```

    ## Known limitations
    Only broadcasts whose result reaches a reduction or a loss are reported, so a matrix
    that is built and kept (indexed, stored) is not. An `[N, 1]` made by an explicit
    `unsqueeze` or `view` on an earlier line and combined with an `[N]` from another tensor
    is reported: the probe cannot tell an outer difference written over two lines from a
    target reshaped for another loss.
    """

    code = "TL739"
    name = "broadcast-to-square"
    summary = "An `[N]` and an `[N, 1]` broadcast to `[N, N]` before a reduction or a loss"


class LossTargetMismatch(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the broadcast probe) when a loss that torch runs without an
    error or a warning gets a target that does not fit its input:

    - a loss that broadcasts input and target of different shapes silently. In torch 2.13
      these are `poisson_nll_loss`, `kl_div`, `gaussian_nll_loss`, `hinge_embedding_loss` and
      `multilabel_soft_margin_loss` (and their `nn` modules); the probe checks at start-up
      which losses of the installed torch broadcast without a warning, and leaves those that
      warn to TL716;
    - `cross_entropy` (`nn.CrossEntropyLoss`) given a float target of the input's shape,
      which torch reads as class probabilities, whose values are not probabilities: values
      below 0 or above 1 (class indices or scores), or rows that do not sum to 1 (multi-hot
      labels of a multi-label problem). Rows of zeros (masked samples) are accepted. Checked
      on the first calls at each line, when the device computes values.

    ## Why is this bad?
    The loss is a number and training runs. An `[N, 1]` input against an `[N]` target gives
    an `[N, N]` loss of every input against every target, and the model learns the mean
    target. Cross-entropy over targets that are not distributions is not a likelihood:
    multi-hot rows make the labels of one sample compete through the softmax (a multi-label
    problem needs `BCEWithLogitsLoss`), and values above 1 weigh classes at random.

    ## Example
    ```python
    rate = model(x)                                # [N, 1]
    loss = F.poisson_nll_loss(rate, counts)        # counts: [N]
    loss = F.cross_entropy(logits, tags.float())   # tags: multi-hot [N, C]
    ```

    ## Use instead
    ```python
    loss = F.poisson_nll_loss(rate.squeeze(-1), counts)
    loss = F.binary_cross_entropy_with_logits(logits, tags.float())
    ```

    ## Known limitations
    Losses that raise on these inputs in torch 2.13 are not reported (the error says it):
    `binary_cross_entropy` and `binary_cross_entropy_with_logits` with an `[N, 1]` input and
    an `[N]` target, `cross_entropy` with float class indices of shape `[N]`, a
    `soft_margin_loss` or `margin_ranking_loss` of different shapes. A `cross_entropy` over a
    `[B, T, V]` input whose classes are not in dimension 1 is silent only when `T == V` and is
    not checked.
    """

    code = "TL740"
    name = "loss-target-mismatch"
    summary = "A loss ran silently on a target that does not fit its input"
    severity = Severity.ERROR


@hookimpl
def torchlint_rules() -> list[type]:
    return [BroadcastToSquare, LossTargetMismatch]


@hookimpl
def torchlint_probes() -> list[type]:
    from .probe import BroadcastProbe  # imports torch: only in the child of `torchlint run`

    return [BroadcastProbe]
