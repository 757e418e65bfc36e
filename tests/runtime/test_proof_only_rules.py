"""Under `torchlint run`, a rule that is off by default for its static precision still runs,
and its finding is reported only where the run proves it: the program's own device error
confirms TL201; a CPU tensor the run never sees meet a device tensor stays unreported. An
explicit selection or an ignore is the user's word and is kept."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import torchlint_run

pytest.importorskip("torch")

MODEL = """
import torch
from torch import nn


class Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        noise = torch.randn(x.shape[0], x.shape[1])
        return self.fc(x + noise)


def unused(x):
    return x + torch.zeros(x.shape[0])
"""

TRAIN = """
import torch
from models import Noisy

device = "cuda" if torch.cuda.is_available() else "cpu"
model = Noisy().to(device)
print(model(torch.ones(3, 4, device=device)).shape)
"""


@pytest.fixture
def project(tmp_path):
    (tmp_path / "models.py").write_text(textwrap.dedent(MODEL).lstrip("\n"))
    (tmp_path / "train.py").write_text(textwrap.dedent(TRAIN).lstrip("\n"))
    return tmp_path


def reported(result) -> list[tuple[str, str, int]]:
    report = json.loads(result.stdout)
    return sorted((f["code"], f["filename"], f["location"]["row"]) for f in report["findings"] if f["code"].startswith("TL2"))


def test_the_run_proves_an_off_by_default_rule_and_drops_what_it_does_not_prove(project):
    result = torchlint_run("--device", "fake-cuda", "--output-format", "json", "-q", "train.py", cwd=project, timeout=240)
    assert result.returncode == 1, result.stderr
    assert reported(result) == [("TL201", "models.py", 11)], result.stdout  # not `unused`'s line 16
    # the static check alone does not report it: TL201 is off by default
    from click.testing import CliRunner

    from torchlint.cli import main

    static = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "json", str(project / "models.py")])
    assert "TL201" not in static.output


def test_an_ignore_keeps_the_rule_off_under_run_too(project):
    (project / "pyproject.toml").write_text('[tool.torchlint]\nignore = ["TL201"]\n')
    result = torchlint_run("--device", "fake-cuda", "--output-format", "json", "-q", "train.py", cwd=project, timeout=240)
    assert result.returncode == 1, result.stderr
    assert reported(result) == [], result.stdout
