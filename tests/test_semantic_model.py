"""The engine's semantic model, seen through the rules that read it: values followed across
functions, classes, setters, tuple returns, branches and files."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from click.testing import CliRunner

from torchlint.cli import main
from torchlint.testing import check_sources


def lines(code: str, select: str = "TL101") -> list[int]:
    result = check_sources({"example.py": textwrap.dedent(code).lstrip("\n")}, select=[select])
    return [f.location.line for f in result.findings]


def project(tmp_path: Path, files: dict[str, str], select: str = "TL101,TL102") -> list[tuple[str, int, str, str]]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--output-format", "json", "--select", select, str(tmp_path)], catch_exceptions=False
    )
    findings = json.loads(result.output)
    return [(Path(f["filename"]).name, f["location"]["row"], f["code"], f["message"]) for f in findings]


# -- within a file ----------------------------------------------------------------------------
#: Probabilities made in a model's forward reach the loss a training function is given (line 9).
PASSED_INTO_TRAIN = """
    import torch.nn as nn

    class Net(nn.Module):
        def forward(self, x):
            return nn.functional.softmax(self.fc(x), dim=1)

    def train(model, criterion, loader):
        for x, y in loader:
            loss = criterion(model(x), y)

    train(Net(), nn.CrossEntropyLoss(), loader)
    """


def test_model_and_loss_passed_into_a_training_function():
    assert lines(PASSED_INTO_TRAIN) == [9]


def test_functions_defined_after_a_lone_carriage_return_are_followed():
    # `train` is known as this file's function by a text scan for `def` at a line's start:
    # a lone "\r" starts a line as "\n" does (old Mac files), with or without `async`.
    code = textwrap.dedent(PASSED_INTO_TRAIN).lstrip("\n")
    for newline in ("\n", "\r\n", "\r"):
        text = code.replace("\n", newline)
        for spelled in (text, text.replace("def train", "async def train")):
            result = check_sources({"example.py": spelled}, select=["TL101"])
            assert [f.location.line for f in result.findings] == [9], repr(newline)


def test_trainer_class_with_loss_injected_through_a_setter():
    code = """
    import torch
    import torch.nn as nn

    class Trainer:
        def __init__(self, model):
            self.model = model
            self.loss_fn = None

        def set_loss(self, fn):
            self.loss_fn = fn

        def step(self, x, y):
            out = self.model(x)
            return self.loss_fn(out, y)

    model = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))
    trainer = Trainer(model)
    trainer.set_loss(nn.CrossEntropyLoss())
    """
    assert lines(code) == [14]


def test_model_chosen_in_if_elif_branches():
    code = """
    import torch.nn as nn
    import torch.nn.functional as F

    class Probs(nn.Module):
        def forward(self, x):
            return F.softmax(self.fc(x), dim=-1)

    class Logits(nn.Module):
        def forward(self, x):
            return self.fc(x)

    if arch == "a":
        model = Logits()
    elif arch == "b":
        model = Probs()
    else:
        model = Logits()
    loss = F.cross_entropy(model(x), y)
    """
    result = check_sources({"example.py": textwrap.dedent(code).lstrip("\n")}, select=["TL101"])
    assert [f.location.line for f in result.findings] == [18]
    assert "`Probs.forward` returns softmax output" in result.findings[0].message


def test_forward_returning_a_tuple_with_probabilities():
    code = """
    import torch.nn as nn
    import torch.nn.functional as F

    class Discriminator(nn.Module):
        def forward(self, x):
            h = self.body(x)
            return self.adv(h), F.softmax(self.aux(h), dim=1)

    disc = Discriminator()
    validity, label = disc(x)
    loss = nn.BCEWithLogitsLoss()(validity, real) + nn.CrossEntropyLoss()(label, y)
    features, probs = disc(x)[0], disc(x)[1]
    other = F.cross_entropy(features, y)
    """
    assert lines(code) == [11]


def test_hand_written_softmax_into_cross_entropy_and_nll():
    code = """
    import torch
    import torch.nn.functional as F

    def step(logits, y):
        e = torch.exp(logits)
        p = e / e.sum(dim=1, keepdim=True)
        a = F.cross_entropy(p, y)
        b = F.nll_loss(p, y)
        ok = e / logits.sum(dim=1, keepdim=True)
        return a + b + F.cross_entropy(ok, y)
    """
    assert lines(code, "TL101") == [7]
    assert lines(code, "TL102") == [8]


def test_module_overriding_call_instead_of_forward():
    code = """
    import torch
    import torch.nn as nn

    class Head:
        def __call__(self, x):
            return torch.softmax(x, dim=-1)

    head = Head()
    loss = nn.CrossEntropyLoss()(head(x), y)
    """
    assert lines(code) == [9]


def test_helper_method_forwards_the_value():
    code = """
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 3)])
            self.out = nn.Sequential(nn.Linear(3, 3), nn.Softmax(dim=1), nn.Dropout(0.1))

        def _head(self, h):
            return self.out(h)

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return self._head(x)

    loss = nn.NLLLoss()(Net()(x), y)
    """
    assert lines(code, "TL102") == [17]


def test_eval_only_softmax_and_metrics_are_left_alone():
    code = """
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def forward(self, x, inference=False):
            logits = self.fc(x)
            if inference:
                return logits.softmax(-1)
            return logits

    def train(model, x, y):
        out = model(x)
        loss = F.cross_entropy(out, y)
        probs = out.softmax(1)
        acc = (probs.argmax(1) == y).float().mean()
        return loss

    train(Net(), x, y)
    """
    assert lines(code) == []


def test_recursive_helpers_terminate():
    code = """
    import torch.nn.functional as F

    def f(x):
        return g(x)

    def g(x):
        return f(x) if x else F.softmax(x, 1)

    loss = F.cross_entropy(f(x), y)
    """
    assert lines(code) == [9]


# -- across files -----------------------------------------------------------------------------
MODELS = """
import torch.nn as nn
import torch.nn.functional as F

class Net(nn.Module):
    def forward(self, x):
        return F.softmax(self.fc(x), dim=1)

class Pair(nn.Module):
    def forward(self, x):
        h = self.body(x)
        return h, F.softmax(self.head(h), dim=1)

probs_net = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))
"""


def test_star_import_of_models(tmp_path):
    found = project(tmp_path, {
        "models.py": MODELS,
        "train.py": """
            import torch.nn as nn
            from models import *

            criterion = nn.CrossEntropyLoss()
            loss = criterion(Net()(x), y)
        """,
    })
    assert [(f, line, code) for f, line, code, _ in found] == [("train.py", 5, "TL101")]
    assert "`Net.forward` returns softmax output: `F.softmax(...)` at" in found[0][3]
    assert "models.py:6" in found[0][3]


def test_module_level_sequential_imported_from_another_file(tmp_path):
    found = project(tmp_path, {
        "models.py": MODELS,
        "train.py": """
            import torch.nn.functional as F
            from models import probs_net

            loss = F.nll_loss(probs_net(x), y)
        """,
    })
    assert [(f, line, code) for f, line, code, _ in found] == [("train.py", 4, "TL102")]


def test_tuple_element_of_an_imported_model(tmp_path):
    found = project(tmp_path, {
        "models.py": MODELS,
        "train.py": """
            import torch.nn.functional as F
            from models import Pair

            net = Pair()
            _, probs = net(x)
            features, _ = net(x)
            loss = F.cross_entropy(probs, y) + F.cross_entropy(features, y)
        """,
    })
    assert [(f, line, code) for f, line, code, _ in found] == [("train.py", 7, "TL101")]


def test_training_function_in_another_file_gets_the_model_from_main(tmp_path):
    found = project(tmp_path, {
        "models.py": MODELS,
        "engine.py": """
            def train_one_epoch(model, criterion, loader, optimizer):
                for x, y in loader:
                    loss = criterion(model(x), y)
                    loss.backward()
        """,
        "main.py": """
            import torch.nn as nn
            from engine import train_one_epoch
            from models import Net

            train_one_epoch(Net(), nn.CrossEntropyLoss(), loader, optimizer)
        """,
    }, select="TL101")
    # engine.py names neither softmax nor a loss: the rule still reads it (`loss`, `criterion`).
    assert [(f, line, code) for f, line, code, _ in found] == [("engine.py", 3, "TL101")]


def test_logits_model_across_files_is_left_alone(tmp_path):
    found = project(tmp_path, {
        "models.py": "import torch.nn as nn\n\nclass Net(nn.Module):\n    def forward(self, x):\n        return self.fc(x)\n",
        "engine.py": "def fit(model, criterion, x, y):\n    return criterion(model(x), y)\n",
        "main.py": "import torch.nn as nn\nfrom engine import fit\nfrom models import Net\n\nfit(Net(), nn.CrossEntropyLoss(), x, y)\n",
    })
    assert found == []


# -- TL103 through the model ------------------------------------------------------------------
def test_inplace_on_the_output_of_a_user_submodule_that_returns_relu():
    code = """
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        def forward(self, x):
            return torch.relu(self.fc(x))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            h = self.block(x)
            h += 1
            return h
    """
    result = check_sources({"example.py": textwrap.dedent(code).lstrip("\n")}, select=["TL103"])
    assert [f.location.line for f in result.findings] == [15]
    assert "returned by `Block.forward`" in result.findings[0].message


def test_inplace_in_a_helper_reached_from_forward_but_not_from_no_grad_code():
    reached = """
    import torch
    import torch.nn as nn

    def scale(h):
        h.mul_(2)
        return h

    class Net(nn.Module):
        def forward(self, x):
            return scale(torch.sigmoid(self.fc(x)))
    """
    only_no_grad = reached.replace(
        "            return scale(torch.sigmoid(self.fc(x)))",
        "            with torch.no_grad():\n                return scale(torch.sigmoid(self.fc(x)))",
    )
    assert lines(reached, "TL103") == [5]
    assert lines(only_no_grad, "TL103") == []


def test_every_arm_rebinding_the_name_kills_the_saved_output():
    code = """
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        def forward(self, x):
            return torch.tanh(x)

    class Net(nn.Module):
        def forward(self, x):
            h = self.block(x)
            if self.a:
                h = h * 2
            elif self.b:
                h = h + 1
            else:
                h = self.fc(h)
            h += 1
            return h

        block = Block()
    """
    assert lines(code, "TL103") == []


def test_a_forward_returning_what_a_nested_helper_returns():
    code = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            def head(h):
                return F.softmax(self.fc(h), dim=1)
            return head(x)

    def train(x, y):
        model = Net()
        return F.cross_entropy(model(x), y)
    """
    assert lines(code) == [17]
