"""Known torch errors that no static finding explains are reported with what helps, in place
of the bare crash (TL702): the module a shape error happened in (TL717), the model an
optimizer found no parameters in (TL718). One run per script, on the CPU."""

from __future__ import annotations

import textwrap

import pytest

from conftest import torchlint_run

pytest.importorskip("torch")

pytestmark = pytest.mark.slow

SHAPE = """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten())
        self.classifier = nn.Sequential(nn.Dropout(0.1), nn.Linear(512, 10))

    def forward(self, x):
        return self.classifier(self.features(x))

model = Net()
out = model(torch.randn(4, 3, 12, 12))
"""

EMPTY = """
import torch
from torch import nn

class Net(nn.Module):
    def __int__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(4, 4) for _ in range(3)]

stack = Stack()
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
"""


def run_script(tmp_path_factory, name: str, source: str):
    folder = tmp_path_factory.mktemp(name)
    (folder / "train.py").write_text(textwrap.dedent(source).lstrip("\n"))
    return torchlint_run("train.py", "--device", "cpu", "--output-format", "json", cwd=folder, timeout=120)


def test_a_shape_error_names_the_module_by_its_path_and_the_shapes_it_got(tmp_path_factory):
    run = run_script(tmp_path_factory, "shape", SHAPE)
    (finding,) = run.findings("runtime only")
    assert finding["code"] == "TL717"  # in place of TL702: one finding for one crash
    assert finding["location"]["row"] == 11  # the user line inside forward
    message = finding["message"]
    assert message.startswith("mat1 and mat2 shapes cannot be multiplied (4x800 and 512x10)")
    assert "`Net.classifier.1` (Linear(in_features=512, out_features=10, bias=True))" in message
    assert "a tensor of shape (4, 800)" in message
    assert run.returncode == 1


def test_an_empty_parameter_list_names_the_model_and_why(tmp_path_factory):
    run = run_script(tmp_path_factory, "empty", EMPTY)
    (finding,) = run.findings("runtime only")
    assert finding["code"] == "TL718"
    assert finding["location"]["row"] == 16
    message = finding["message"]
    assert "`model` (Net) has no parameters: `Net` defines `__int__`, not `__init__`" in message
    assert "`stack` (Stack) has no parameters: its layers are in a plain list `self.layers`" in message
    assert "use nn.ModuleList" in message
