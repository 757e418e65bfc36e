from __future__ import annotations

from torchlint.fix import UNSAFE, NodeFix
from torchlint.rule import Bad, Good

from ._loss_input import LossInputRule


class NllLossWithoutLogSoftmax(LossInputRule):
    """
    ## What it does
    Flags `F.nll_loss` / `nn.NLLLoss` calls whose INPUT (first argument) is softmax output
    rather than log-probabilities: from `F.softmax`, `torch.softmax`, `torch.special.softmax`,
    `x.softmax(dim)`, an `nn.Softmax` module, an `nn.Sequential` ending in `nn.Softmax`, or a
    model (in this file or imported from another) whose `forward` returns one of those on every
    path. Values are followed through local variables and view-like operations, as in TL101.

    ## Why is this bad?
    `NLLLoss` does no normalisation of its own: it returns `-input[target]` averaged over the
    batch, so it expects log-probabilities (`log_softmax`). Given probabilities, it minimises
    `-p[target]` instead of `-log p[target]`: the loss is bounded in [-1, 0], confidently
    wrong predictions get almost no gradient, and training stalls or converges to a poor model
    while reporting negative losses. Use `log_softmax` + `NLLLoss`, or pass the logits to
    `CrossEntropyLoss`, which is exactly that combination.

    `torch.log(F.softmax(x))` is log-probabilities and is not flagged here (it is numerically
    worse than `log_softmax`, which is another rule's business).

    ## Fix safety
    When the softmax is written inside the loss call, the fix turns it into `log_softmax`.
    It is unsafe: the loss value changes — which is the point.

    ## Example
    ```python
    probs = F.softmax(model(x), dim=1)
    loss = F.nll_loss(probs, y)
    ```

    ## Use instead
    ```python
    loss = F.nll_loss(F.log_softmax(model(x), dim=1), y)
    # or: loss = F.cross_entropy(model(x), y)
    ```
    """

    code = "TL102"
    name = "nll-loss-without-log-softmax"
    summary = "`nll_loss` expects log-probabilities; softmax output gives it -p instead of -log p"
    #: `.train(`, `.fit(`: a driver handing its model to a trainer object of another file
    triggers = ("softmax", "Softmax", "nll_loss", "NLLLoss", "loss", "criterion", ".train(", ".fit(")
    loss_kind = "nll"
    loss_label_functional = "nll_loss"
    loss_label_module = "NLLLoss"
    fix_safety = UNSAFE

    def fix_softmax(self, softmax, inner, is_method):
        import libcst as cst

        func = softmax.func
        if type(func) is cst.Attribute:
            renamed = func.with_changes(attr=cst.Name("log_softmax"))
        elif type(func) is cst.Name:
            renamed = func.with_changes(value="log_softmax")
        else:
            return None
        return NodeFix("Use log_softmax", UNSAFE, ((func, renamed),))

    @classmethod
    def message(cls, loss_label: str, where: str) -> str:
        return f"{loss_label} expects log-probabilities; its input here is softmax output ({where}): use log_softmax"

    cases = [
        Bad(
            """
            import torch.nn.functional as F

            def step(logits, y):
                return F.nll_loss(F.softmax(logits, dim=1), y)  # error
            """,
            fixed="""
            import torch.nn.functional as F

            def step(logits, y):
                return F.nll_loss(F.log_softmax(logits, dim=1), y)  # error
            """,
            note="the fix turns the softmax into log_softmax",
        ),
        Bad(
            """
            import torch.nn.functional as F

            def step(model, x, y):
                out = F.softmax(model(x), dim=1)
                return F.nll_loss(out, y)  # error
            """,
            note="functional softmax through a local variable",
        ),
        Bad(
            """
            import torch as T
            from torch.nn import functional

            def step(logits, y, n):
                p = T.softmax(logits, 1).permute(0, 2, 1).reshape(-1, n)
                return functional.nll_loss(p.cpu(), y.view(-1))  # error
            """,
            note="aliases and a view chain",
        ),
        Bad(
            """
            from torch import nn

            criterion = nn.NLLLoss()

            def train(model, loader):
                for x, y in loader:
                    out = model(x).softmax(dim=-1)
                    loss = criterion(out, y)  # error
                    other = nn.NLLLoss(reduction="sum")(nn.Softmax(dim=1)(x), y)  # error
            """,
            note="method form, module-level criterion, inline modules",
        ),
        Bad(
            """
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(10, 3)
                    self.act = nn.Softmax(dim=1)
                    self.loss = nn.NLLLoss()

                def forward(self, x):
                    x = self.fc(x)
                    x = self.act(x)
                    return x

                def training_step(self, x, y):
                    return self.loss(self.forward(x), y)  # error
            """,
            note="nn.Softmax on self; forward called explicitly",
        ),
        Bad(
            """
            import torch.nn as nn
            import torch.nn.functional as F

            def main(x, y):
                model = nn.Sequential(nn.Linear(784, 10), nn.Softmax(dim=1))
                model = model.to("cuda")
                return F.nll_loss(model(x), y)  # error
            """,
            note="a local nn.Sequential ending in nn.Softmax",
        ),
        Bad(
            files={
                "models.py": """
                    import torch.nn as nn
                    import torch.nn.functional as F

                    class Net(nn.Module):
                        def forward(self, x):
                            x = self.fc(x)
                            return F.softmax(x, dim=1)
                    """,
                "train.py": """
                    import torch.nn.functional as F
                    import models

                    def train(loader):
                        model = models.Net()
                        for x, y in loader:
                            loss = F.nll_loss(model(x), y)  # error
                    """,
            },
            note="cross-file, class reached through `import models`",
        ),
        Bad(
            """
            import torch.nn as nn
            import torch.nn.functional as F

            class Net(nn.Module):
                def forward(self, x, log=False):
                    out = self.fc(x)
                    if log:
                        return F.log_softmax(out, dim=1)
                    return F.softmax(out, dim=1)

            net = Net()
            a = F.nll_loss(net(x), y)  # error
            b = F.nll_loss(net(x, log=False), y)  # error
            c = F.nll_loss(net(x, log=True), y)
            """,
            note="the branch a call selects by keyword: `log=True` gives log-probabilities, the default does not",
        ),
        Bad(
            files={
                "model.py": """
                    import torch.nn as nn
                    import torch.nn.functional as F

                    class Net(nn.Module):
                        def forward(self, x, log=False):
                            out = self.fc(x)
                            if not log:
                                return F.softmax(out, dim=1)
                            return F.log_softmax(out, dim=1)
                """,
                "train.py": """
                    import torch.nn.functional as F
                    from model import Net

                    net = Net()
                    good = F.nll_loss(net(x, log=True), y)
                    bad = F.nll_loss(net(x), y)  # error
                """,
            },
            note="across files too: the model's summary keeps which branch each flag selects",
        ),
        Good(
            """
            import torch.nn as nn
            import torch.nn.functional as F

            def step(model, x, y):
                a = F.nll_loss(F.log_softmax(model(x), dim=1), y)
                head = nn.Sequential(nn.Linear(4, 2), nn.LogSoftmax(dim=1))
                b = nn.NLLLoss()(head(x), y)
                return a + b
            """,
            note="log_softmax + NLLLoss is the correct pairing",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F

            def step(logits, y):
                p = F.softmax(logits, dim=1)
                a = F.nll_loss(torch.log(p), y)
                b = F.nll_loss(p.log(), y)
                c = F.nll_loss(torch.log(p + 1e-8), y)
                return a + b + c
            """,
            note="log of softmax is log-probabilities (a stability issue, not this rule)",
        ),
        Good(
            """
            import torch.nn.functional as F

            def step(model, x, y):
                logp = F.log_softmax(model(x), 1)
                loss = F.nll_loss(logp, y)
                conf = F.softmax(model(x), 1).max(1)[0]
                return loss, conf
            """,
            note="softmax only for confidence metrics",
        ),
        Good(
            """
            import torch.nn.functional as F

            def step(out, y, training):
                if not training:
                    out = out.softmax(-1)
                return F.nll_loss(out, y)
            """,
            note="softmax in a branch that does not enclose the loss",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F

            def step(x, y):
                out = F.softmax(x, 1)
                out = torch.log(out)
                return F.nll_loss(out, y)
            """,
            note="re-assigned to its log before the loss",
        ),
        Good(
            """
            import torch.nn as nn
            import torch.nn.functional as F

            class Net(nn.Module):
                def forward(self, x):
                    x = self.fc(x)
                    if self.training:
                        return F.log_softmax(x, 1)
                    return F.softmax(x, 1)

            def train(x, y):
                model = Net()
                return F.nll_loss(model(x), y)
            """,
            note="forward returns log-probabilities on the training path",
        ),
        Good(
            """
            import torch.nn.functional as F

            def step(logits, y, teacher):
                ce = F.cross_entropy(F.softmax(logits, 1), y)
                kl = F.kl_div(F.log_softmax(logits, 1), F.softmax(teacher, 1))
                return F.nll_loss(logits, y) + ce + kl
            """,
            note="cross_entropy is TL101's; kl_div takes probabilities as target",
        ),
        Good(
            files={
                "models.py": """
                    import torch.nn as nn
                    import torch.nn.functional as F

                    class Net(nn.Module):
                        def forward(self, x):
                            return F.log_softmax(self.fc(x), dim=1)
                    """,
                "train.py": """
                    import torch.nn.functional as F
                    from models import Net

                    def train(x, y):
                        model = Net()
                        return F.nll_loss(model(x), y)
                    """,
            },
            note="cross-file: the model returns log_softmax",
        ),
        Bad(
            """
            import torch.nn as nn

            class RNN(nn.Module):
                def __init__(self, hidden_size, output_size):
                    super().__init__()
                    self.softmax = nn.Softmax(dim=1)

            criterion = nn.NLLLoss()

            def train(rnn, logits, target):
                probs = rnn.softmax(logits)
                return criterion(probs, target)  # error
            """,
            note="`rnn` is a parameter nobody here passes; the one class of this file with a `softmax` attribute makes it nn.Softmax",
        ),
        Good(
            """
            import torch.nn as nn

            class RNN(nn.Module):
                def __init__(self, hidden_size, output_size):
                    super().__init__()
                    self.softmax = nn.LogSoftmax(dim=1)

            class Head(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.out = nn.Softmax(dim=1)
                    self.act = nn.LogSoftmax(dim=1)

            class Other(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.act = nn.Softmax(dim=1)

            criterion = nn.NLLLoss()

            def train(rnn, logits, target):
                return criterion(rnn.softmax(logits), target) + criterion(rnn.act(logits), target)
            """,
            note="the char-RNN tutorial names its nn.LogSoftmax `softmax`; classes that disagree about an attribute say nothing",
        ),
    ]
