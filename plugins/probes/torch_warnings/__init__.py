"""Warnings probe: the torch warnings that signal a bug become findings at the user's line.

The plugin: the probe's rules with their docs, and the probe class, imported only in the
child of `torchlint run` (this module must not import torch: `torchlint check` loads it).
"""

from __future__ import annotations

from torchlint.findings import Severity
from torchlint.pluginmanager import hookimpl
from torchlint.probe import RuntimeRule


class ImplicitSoftmaxDim(RuntimeRule):
    """
    ## What it does
    Reports a `softmax`, `log_softmax` or `softmin` (functional, method or `nn.Softmax()`)
    called without `dim` while the program ran, at the user line that called it. torch
    warns about it once ("Implicit dimension choice for softmax has been deprecated");
    `torchlint run` turns the warning into a finding even when the program filters warnings.

    ## Why is this bad?
    Without `dim`, torch picks dimension 0 for 0-, 1- and 3-d inputs and dimension 1
    otherwise. A `(batch, seq, classes)` tensor is then normalised over the batch: every
    "probability" depends on the other samples, and the model trains on nonsense without
    an error.

    A 1- or 2-d input is not this finding: there torch picks the last dimension, the one
    `dim=-1` names (a `(batch, classes)` head's `nn.Softmax()`), so the call is deprecated
    but computes what was meant; it is reported as the torch warning it is (TL755).

    ## Example
    ```python
    probs = F.softmax(logits)          # logits: (batch, seq, vocab)
    ```

    ## Use instead
    ```python
    probs = F.softmax(logits, dim=-1)
    ```
    """

    code = "TL713"
    name = "implicit-softmax-dim"
    summary = "softmax/log_softmax without dim ran: torch chose the dimension"
    severity = Severity.WARNING


class TensorCopyConstructed(RuntimeRule):
    """
    ## What it does
    Reports `torch.tensor(t)` called on a tensor while the program ran, at the user line
    (torch's warning: "To copy construct from a tensor, it is recommended to use
    sourceTensor.detach().clone()").

    ## Why is this bad?
    `torch.tensor` always copies its data and the copy is cut from the autograd graph: a
    loss built from it sends no gradient back to `t`, silently. It also copies when no copy
    was wanted.

    ## Example
    ```python
    features = torch.tensor(encoder(x))       # no gradient reaches the encoder
    ```

    ## Use instead
    ```python
    features = encoder(x)                      # or x.clone() to keep the gradient,
    snapshot = encoder(x).detach().clone()     # a separate copy on purpose,
    values = torch.as_tensor(array)            # or no copy at all
    ```
    """

    code = "TL714"
    name = "tensor-copy-constructed"
    summary = "torch.tensor() of a tensor ran: a copy cut from the graph"
    severity = Severity.WARNING


class GradOfNonLeaf(RuntimeRule):
    """
    ## What it does
    Reports reading `.grad` of a tensor that is not a leaf of the autograd graph while the
    program ran, at the user line (torch's warning: "The .grad attribute of a Tensor that is
    not a leaf Tensor is being accessed").

    ## Why is this bad?
    Autograd keeps gradients only for leaves (parameters, tensors created with
    `requires_grad=True`): the non-leaf's `.grad` is `None` after `backward()`. Usually the
    tensor was moved or cast after `requires_grad=True` (`torch.randn(3, requires_grad=True)
    .cuda()` is not a leaf), and an optimizer given it never updates anything.

    ## Example
    ```python
    w = torch.randn(3, requires_grad=True).to(device)   # not a leaf: the .to made a copy
    loss = (w * x).sum()
    loss.backward()
    print(w.grad)                                        # None
    ```

    ## Use instead
    ```python
    w = torch.randn(3, device=device, requires_grad=True)
    ```
    or call `w.retain_grad()` before `backward()` when the intermediate's gradient is wanted.
    """

    code = "TL715"
    name = "grad-of-non-leaf"
    summary = ".grad of a tensor that is not a leaf was read: it is None after backward()"
    severity = Severity.WARNING


class LossSizeMismatch(RuntimeRule):
    """
    ## What it does
    Reports a regression loss (`mse_loss`, `l1_loss`, `smooth_l1_loss`, `huber_loss`, ...,
    and their `nn` modules) given an input and a target of different sizes while the program
    ran, at the user line, with both sizes and the shape they broadcast to (torch's warning:
    "Using a target size that is different to the input size").

    ## Why is this bad?
    The two broadcast: an output of size `[N, 1]` against a target of size `[N]` gives an
    `[N, N]` difference, every prediction compared with every target. The loss is a number,
    it goes down a little, and the model learns the mean.

    ## Example
    ```python
    pred = model(x)                  # [N, 1]
    loss = F.mse_loss(pred, y)       # y: [N]
    ```

    ## Use instead
    ```python
    loss = F.mse_loss(pred.squeeze(-1), y)
    ```
    """

    code = "TL716"
    name = "loss-size-mismatch"
    summary = "A loss got input and target of different sizes, which broadcast"


class TorchWarning(RuntimeRule):
    """
    ## What it does
    Reports each warning torch raised while the program ran (a deprecation, a behaviour
    that changes, a call that does not do what its arguments suggest), at the user line that
    triggered it, once per line and warning, with torch's text. The warnings with a rule of
    their own (TL713-TL716) are reported under it instead. Seen even when the program
    filters warnings out. Warnings about the machine rather than the program (autocast or
    `GradScaler` for CUDA disabling themselves because CUDA is not available, `pin_memory`
    without an accelerator, more DataLoader workers than the machine has cores) are left
    out: a GPU program run under `--device cpu` says them on every run, and on its own
    machine it does not. So is torch's note that an `nn.TransformerEncoder` built with its
    default `enable_nested_tensor=True` cannot use nested tensors (an inference speed hint
    about torch's own default).

    ## Why is this bad?
    torch says each of these once, in the middle of a training log, and often attributes it
    to a line of its own code; they scroll away. Some announce a result that is about to
    change under the program (a default that flips in the next release), some a call that
    already does something other than what was meant.

    ## Example
    ```python
    probs = F.softmax(logits)          # "Implicit dimension choice for softmax has been deprecated"
    ```

    ## Use instead
    ```python
    probs = F.softmax(logits, dim=-1)
    ```
    """

    code = "TL755"
    name = "torch-warning"
    summary = "torch warned while the program ran: the warning, at the user line that triggered it"
    severity = Severity.WARNING


@hookimpl
def torchlint_rules() -> list[type]:
    return [ImplicitSoftmaxDim, TensorCopyConstructed, GradOfNonLeaf, LossSizeMismatch, TorchWarning]


@hookimpl
def torchlint_probes() -> list[type]:
    from torchlint.plugins.probes.torch_warnings.probe import PROBE

    return [PROBE]
