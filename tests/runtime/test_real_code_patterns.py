"""Patterns from public training programs (pytorch/examples, nanoGPT, minGPT, PyTorch-GAN,
pytorch-cifar, pytorch-seq2seq) on which a probe once reported what the code's author would
rightly reject. Each program is the pattern cut down to a few lines, run once and shared."""

from __future__ import annotations

import textwrap

import pytest
from conftest import torchlint_run

pytest.importorskip("torch")

pytestmark = pytest.mark.slow


def run_script(folder, script: str, *options: str):
    (folder / "train.py").write_text(textwrap.dedent(script).lstrip("\n"))
    return torchlint_run("train.py", "-q", "--output-format", "json", *options, cwd=folder, timeout=180)


# PyTorch-GAN's wgan_gp.py: the critic's last bias gets a gradient of exactly zero at every
# step, because `-mean(real) + mean(fake)` does not change when the critic's output shifts by
# a constant. Arithmetic, not a cut graph; a layer really left out of forward still counts.
WGAN_CRITIC = """
import torch
from torch import nn

class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
        self.unused = nn.Linear(16, 1)

    def forward(self, x):
        return self.model(x)

torch.manual_seed(0)
critic = Critic()
optimizer = torch.optim.Adam(critic.parameters(), lr=1e-3)
for step in range(4):
    real, fake = torch.randn(24, 8) + 1, torch.randn(24, 8)
    optimizer.zero_grad()
    loss = -critic(real).mean() + critic(fake).mean()
    loss.backward()
    optimizer.step()
"""


@pytest.fixture(scope="module")
def wgan(tmp_path_factory):
    return run_script(tmp_path_factory.mktemp("wgan"), WGAN_CRITIC)


def test_a_bias_whose_gradient_cancels_is_no_parameter_without_gradient(wgan):
    starved = [f for f in wgan.findings("runtime only") if f["code"] == "TL730"]
    assert len(starved) == 1, wgan.stdout
    message = starved[0]["message"]
    assert message.startswith("2 parameters the optimizer updates got no gradient")
    assert "`Critic.unused.bias`, `Critic.unused.weight`" in message
    assert "model.2.bias" not in message
    assert wgan.codes("runtime only") == {"TL730"}
