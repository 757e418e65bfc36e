from __future__ import annotations

from torchlint.fix import UNSAFE, NodeFix
from torchlint.rule import Bad, Good

from ._loss_input import LossInputRule


class SoftmaxBeforeCrossEntropy(LossInputRule):
    """
    ## What it does
    Flags `F.cross_entropy` / `nn.CrossEntropyLoss` calls whose INPUT (first argument) is
    softmax output: from `F.softmax`, `torch.softmax`, `torch.special.softmax`, `x.softmax(dim)`,
    an `nn.Softmax` module (inline, in a variable or a `self.<attr>`), an `nn.Sequential` whose
    last layer is `nn.Softmax`, or a model whose `forward` returns one of those on every path,
    including a model defined in another file of the project. The probabilities are followed
    through local variables and through view, reshape, flatten, squeeze, unsqueeze, permute,
    transpose, contiguous, indexing, `.to`, `.float`, `.cuda`, `.cpu`, `.clone` and `.detach`.

    ## Why is this bad?
    `CrossEntropyLoss` is `log_softmax` followed by `NLLLoss`: it expects raw, unnormalised
    logits. Feeding it probabilities applies softmax twice. The loss can no longer approach zero
    (with 10 classes it is bounded below by about 1.46), and the gradients are squashed: on
    random logits of scale 5 they were 14x smaller than with the logits, and a linear classifier
    trained for 200 SGD steps reached 79% instead of 95% accuracy. Nothing raises an error;
    the model just trains slowly or stalls. PyTorch has been asked to warn about exactly this
    (pytorch/pytorch#55902).

    Only the input matters: probabilities as the TARGET (soft labels, distillation) are what
    `cross_entropy` expects there. Log-probabilities (`log_softmax`, `torch.log(softmax)`) as
    the input are mathematically fine.

    ## Fix safety
    When the softmax is written inside the loss call, the fix removes it (the loss receives
    the logits). It is unsafe: the loss value changes — which is the point.

    ## Example
    ```python
    probs = F.softmax(model(x), dim=1)
    loss = F.cross_entropy(probs, y)
    ```

    ## Use instead
    ```python
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    probs = logits.softmax(dim=1)  # only where probabilities are needed (metrics, inference)
    ```
    """

    code = "TL101"
    name = "softmax-before-cross-entropy"
    summary = "`cross_entropy` applies log_softmax itself; feeding it softmax output squashes the gradients"
    # "loss" and "criterion": a training function in a file of its own calls a loss it was
    # given, and the project phase needs that call whatever the file names.
    #: `.train(`, `.fit(`: a driver handing its model to a trainer object of another file
    triggers = ("softmax", "Softmax", "cross_entropy", "CrossEntropyLoss", "loss", "criterion", ".train(", ".fit(")
    loss_kind = "cross_entropy"
    loss_label_functional = "cross_entropy"
    loss_label_module = "CrossEntropyLoss"
    fix_safety = UNSAFE

    def fix_softmax(self, softmax, inner, is_method):
        return NodeFix("Remove the softmax: pass the logits", UNSAFE, ((softmax, inner),))

    @classmethod
    def message(cls, loss_label: str, where: str) -> str:
        return f"{loss_label} applies log_softmax itself; its input here is softmax output ({where}): pass the logits"

    cases = [
        Bad(
            """
            import torch
            import torch.nn.functional as F

            def step(logits, y):
                a = F.cross_entropy(torch.softmax(logits, dim=-1), y)  # error
                b = F.cross_entropy(logits.softmax(1), y)  # error
                return a + b
            """,
            fixed="""
            import torch
            import torch.nn.functional as F

            def step(logits, y):
                a = F.cross_entropy(logits, y)  # error
                b = F.cross_entropy(logits, y)  # error
                return a + b
            """,
            note="a softmax written right in the loss call: the fix passes the logits",
        ),
        Bad(
            """
            import torch.nn as nn

            class MLP(nn.Module):
                def __init__(self, sizes):
                    super().__init__()
                    layers = []
                    for a, b in zip(sizes, sizes[1:]):
                        layers += [nn.Linear(a, b), nn.ReLU()]
                    layers.append(nn.Softmax(dim=1))
                    self.net = nn.Sequential(*layers)

                def forward(self, x):
                    return self.net(x)

            model = MLP([10, 20, 3])
            loss = nn.CrossEntropyLoss()(model(x), y)  # error
            """,
            note="an `nn.Sequential(*layers)` computes what the layer put last in the list does",
        ),
        Bad(
            files={
                "models.py": """
                    import torch
                    import torch.nn as nn

                    class Net(nn.Module):
                        def forward(self, x):
                            return torch.softmax(self.fc(x), dim=1)
                """,
                "trainer.py": """
                    import torch.nn as nn

                    class Trainer:
                        def __init__(self):
                            self.criterion = nn.CrossEntropyLoss()

                        def fit(self, model, batches):
                            for x, y in batches:
                                loss = self.criterion(model(x), y)  # error
                """,
                "main.py": """
                    import torch
                    from models import Net
                    from trainer import Trainer

                    trainer = Trainer()
                    trainer.fit(Net(), batches)
                """,
            },
            note="a driver hands its model to a method of a trainer defined in another file",
        ),
        Good(
            files={
                "trainer.py": """
                    import torch.nn as nn

                    class Trainer:
                        def __init__(self):
                            self.criterion = nn.CrossEntropyLoss()

                        def fit(self, model, batches):
                            for x, y in batches:
                                loss = self.criterion(model(x), y)
                """,
                "main.py": """
                    import torch
                    import torch.nn as nn
                    from trainer import Trainer

                    trainer = Trainer()
                    trainer.fit(nn.Linear(4, 2), batches)
                """,
            },
            note="the model handed over returns logits",
        ),
        Good(
            """
            import torch.nn as nn

            class MLP(nn.Module):
                def __init__(self, sizes):
                    super().__init__()
                    layers = [nn.Softmax(dim=1)]
                    for a, b in zip(sizes, sizes[1:]):
                        layers.append(nn.Linear(a, b))
                    self.net = nn.Sequential(*layers)

                def forward(self, x):
                    return self.net(x)

            model = MLP([10, 20, 3])
            loss = nn.CrossEntropyLoss()(model(x), y)
            """,
            note="the softmax is the first layer of the list, not the last",
        ),
        Bad(
            """
            import torch.nn.functional as F

            def step(model, x, y):
                probs = F.softmax(model(x), dim=1)
                return F.cross_entropy(probs, y)  # error
            """,
            note="functional softmax through a local variable",
        ),
        Bad(
            """
            import torch as T
            from torch.nn import functional

            def step(logits, y, n):
                p = T.softmax(logits, -1).view(-1, n).contiguous()
                p = p[:, :n].float()
                return functional.cross_entropy(input=p, target=y)  # error
            """,
            note="aliases, a view chain, indexing and re-assignment from itself",
        ),
        Bad(
            """
            import torch
            from torch import nn

            criterion = nn.CrossEntropyLoss()

            def train(model, loader):
                for x, y in loader:
                    out = model(x).softmax(1)
                    loss = criterion(out, y)  # error
                    loss.backward()
                    a = nn.CrossEntropyLoss()(torch.special.softmax(x, dim=1), y)  # error
            """,
            note="method form, module-level criterion, inline loss module",
        ),
        Bad(
            """
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(10, 3)
                    self.softmax = nn.Softmax(dim=1)
                    self.criterion = nn.CrossEntropyLoss()

                def forward(self, x):
                    return self.softmax(self.fc(x))

                def training_step(self, batch):
                    x, y = batch
                    return self.criterion(self(x), y)  # error

            def main(device, x, y):
                model = Net().to(device)
                out = model(x)
                loss = nn.CrossEntropyLoss()(out, y)  # error
            """,
            note="nn.Softmax bound on self; a model whose forward returns it, same file",
        ),
        Bad(
            """
            from torch import nn

            if __name__ == "__main__":
                model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10), nn.Softmax(dim=1))
                loss_fn = nn.CrossEntropyLoss()
                for x, y in data:
                    pred = model(x)
                    loss = loss_fn(pred, y)  # error
            """,
            note="an nn.Sequential ending in nn.Softmax",
        ),
        Bad(
            files={
                "models.py": """
                    import torch.nn as nn
                    import torch.nn.functional as F

                    class Net(nn.Module):
                        def __init__(self):
                            super().__init__()
                            self.fc = nn.Linear(10, 3)

                        def forward(self, x):
                            x = self.fc(x)
                            return F.softmax(x, dim=1)
                    """,
                "train.py": """
                    import torch
                    from models import Net

                    model = Net().cuda()
                    criterion = torch.nn.CrossEntropyLoss()

                    def train(loader):
                        model.train()
                        for x, y in loader:
                            loss = criterion(model(x), y)  # error
                    """,
            },
            note="cross-file: the model is defined in models.py, the loss in train.py",
        ),
        Bad(
            files={
                "models.py": """
                    import torch.nn as nn

                    class Classifier(nn.Module):
                        def __init__(self):
                            super().__init__()
                            self.head = nn.Sequential(nn.Linear(8, 4), nn.Softmax(1))

                        def forward(self, x):
                            return self.head(x)
                    """,
                "train.py": """
                    import torch.nn.functional as F
                    from .models import Classifier

                    def train(x, y):
                        net = Classifier()
                        return F.cross_entropy(net(x), y)  # error
                    """,
            },
            note="cross-file through a relative import; the softmax sits in a self.<attr> Sequential",
        ),
        Bad(
            """
            import torch
            from torch import nn

            net = nn.Sequential(nn.Flatten(), nn.Linear(784, 10), nn.Softmax(dim=1))
            loss = nn.CrossEntropyLoss()

            def train_epoch(net, train_iter, loss, updater):
                for X, y in train_iter:
                    l = loss(net(X), y)  # error
                    updater.zero_grad()
                    l.mean().backward()

            train_epoch(net, train_iter, loss, torch.optim.SGD(net.parameters(), lr=0.1))
            """,
            note="model and loss passed as arguments to a module-level function",
        ),
        Good(
            """
            import torch.nn.functional as F

            def distill(student, teacher, x, T=4.0):
                logits = student(x)
                soft_targets = F.softmax(teacher(x) / T, dim=-1)
                return F.cross_entropy(logits / T, soft_targets)
            """,
            note="probabilities as the TARGET (distillation) are correct",
        ),
        Good(
            """
            import torch.nn.functional as F

            def step(model, x, y):
                logits = model(x)
                loss = F.cross_entropy(logits, y)
                probs = F.softmax(logits, dim=1)
                acc = (probs.argmax(1) == y).float().mean()
                return loss, acc
            """,
            note="softmax only for metrics",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F

            def step(logits, y):
                a = F.cross_entropy(torch.log(F.softmax(logits, 1)), y)
                b = F.cross_entropy(F.log_softmax(logits, 1), y)
                p = logits.softmax(-1)
                c = F.cross_entropy(p.log(), y)
                return a + b + c
            """,
            note="log-probabilities as the input are fine",
        ),
        Good(
            """
            import torch.nn.functional as F

            def step(model, x, y, training):
                out = model(x)
                if not training:
                    out = out.softmax(-1)
                return F.cross_entropy(out, y)
            """,
            note="softmax in a branch that does not enclose the loss",
        ),
        Good(
            """
            import torch.nn.functional as F

            def step(model, x, y, calibrate):
                p = F.softmax(x, 1)
                if calibrate:
                    p = model.head(x)
                p = model.head(x)
                return F.cross_entropy(p, y)
            """,
            note="re-assigned from something else before the loss",
        ),
        Good(
            """
            import torch.nn as nn
            import torch.nn.functional as F

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(10, 3)

                def forward(self, x):
                    logits = self.fc(x)
                    if self.training:
                        return logits
                    return logits.softmax(-1)

            model = Net()
            loss = F.cross_entropy(model(x), y)
            """,
            note="forward returns logits in training: not every return is softmax",
        ),
        Good(
            """
            import numpy as np
            from scipy.special import softmax
            import torch.nn.functional as F

            def step(logits, y, F2):
                a = F.cross_entropy(softmax(logits), y)
                b = F.cross_entropy(np.softmax(logits), y)
                c = F.cross_entropy(F2.softmax(logits), y)
                return a + b + c
            """,
            note="softmax functions that are not torch's (and an object's softmax method with a tensor argument)",
        ),
        Good(
            """
            import torch.nn.functional as F

            def softmax(x, dim):
                return x

            def step(logits, y):
                return F.cross_entropy(softmax(logits, 1), y)
            """,
            note="a local function named softmax",
        ),
        Good(
            """
            import torch.nn as nn

            model = nn.Sequential(nn.Linear(784, 10), nn.LogSoftmax(dim=1))
            loss = nn.CrossEntropyLoss()(model(x), y)
            nll = nn.NLLLoss()(nn.Softmax(dim=1)(x), y)
            """,
            note="LogSoftmax last layer; NLLLoss is TL102's business",
        ),
        Bad(
            """
            from torch import nn

            probs_model = nn.Sequential(nn.Linear(784, 10), nn.Softmax(dim=1))
            logits_model = nn.Sequential(nn.Linear(784, 10))

            def fit(model, x, y, loss_fn=nn.CrossEntropyLoss()):
                return loss_fn(model(x), y)  # error

            def run(model, x, y):
                return nn.CrossEntropyLoss()(model(x), y)  # error

            fit(probs_model, x, y)
            run(logits_model, x, y)
            run(probs_model if calibrated else logits_model, x, y)
            """,
            note="a parameter takes what any call passes (or its default): one call path feeds probabilities",
        ),
        Good(
            """
            from torch import nn

            probs_model = nn.Sequential(nn.Linear(784, 10), nn.Softmax(dim=1))
            logits_model = nn.Sequential(nn.Linear(784, 10))

            def run(model, x, y):
                return nn.CrossEntropyLoss()(model(x), y)

            run(logits_model, x, y)
            accuracy = (probs_model(x).argmax(1) == y).float().mean()
            """,
            note="the probability model never reaches the loss",
        ),
        Good(
            files={
                "models.py": """
                    import torch.nn as nn

                    class Net(nn.Module):
                        def forward(self, x):
                            return self.fc(x)

                    class Predictor(nn.Module):
                        def forward(self, x):
                            return self.net(x).softmax(dim=1)
                    """,
                "train.py": """
                    import torch.nn.functional as F
                    from models import Net

                    def train(x, y):
                        model = Net()
                        return F.cross_entropy(model(x), y)
                    """,
            },
            note="cross-file: the trained class returns logits; another class softmaxes",
        ),
        Bad(
            """
            import torch
            import torch.nn.functional as F

            def pick(scores, slot, target):
                probs = torch.softmax(scores, dim=-1)
                selector = F.one_hot(slot, scores.shape[1]).float().unsqueeze(1)
                picked = torch.bmm(selector, probs).squeeze(1)
                return F.cross_entropy(picked, target)  # error
            """,
            note="a one-hot selector times probabilities picks probability rows: still probabilities",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F

            def attend(scores, values, target):
                attn = torch.softmax(scores, dim=-1)
                mixed = torch.bmm(attn, values).squeeze(1)
                return F.cross_entropy(mixed, target)
            """,
            note="probabilities times general values (attention) are not probabilities",
        ),
    ]
