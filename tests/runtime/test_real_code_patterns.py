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


def line_of(script: str, text: str) -> int:
    lines = textwrap.dedent(script).lstrip("\n").splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line)


# PyTorch-GAN's wgan_gp.py: the critic's last bias gets a gradient of exactly zero at every
# step, because `-mean(real) + mean(fake)` does not change when the critic's output shifts by
# a constant. Arithmetic, not a cut graph; a layer really left out of forward still counts.
# acgan.py's auxiliary head, `nn.Softmax()` without dim on (batch, classes): torch picks the
# last dimension, deprecated but right; on a 3-d tensor it picks the batch.
GANS = """
import torch
import torch.nn.functional as F
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
aux = nn.Sequential(nn.Linear(16, 3), nn.Softmax())
class_probs = aux(torch.randn(24, 16))
token_probs = F.softmax(torch.randn(2, 5, 3))
"""


@pytest.fixture(scope="module")
def wgan(tmp_path_factory):
    return run_script(tmp_path_factory.mktemp("gans"), GANS)


def test_a_bias_whose_gradient_cancels_is_no_parameter_without_gradient(wgan):
    starved = [f for f in wgan.findings("runtime only") if f["code"] == "TL730"]
    assert len(starved) == 1, wgan.stdout
    message = starved[0]["message"]
    assert message.startswith("2 parameters the optimizer updates got no gradient")
    assert "`Critic.unused.bias`, `Critic.unused.weight`" in message
    assert "model.2.bias" not in message


def test_softmax_without_dim_is_reported_where_torch_picks_a_dimension_that_is_not_the_last(wgan):
    implicit = {f["location"]["row"]: f["message"] for f in wgan.findings("runtime only") if f["code"] == "TL713"}
    assert set(implicit) == {line_of(GANS, "token_probs =")}, wgan.stdout
    assert "torch chose dim 0 for this 3-d input" in implicit[line_of(GANS, "token_probs =")]
    # The 2-d call is the deprecation torch warns of, nothing worse: TL755 says so, once.
    warned = [f for f in wgan.findings("runtime only") if f["code"] == "TL755"]
    assert [f["location"]["row"] for f in warned] == [line_of(GANS, "class_probs =")], wgan.stdout
    assert "torch chose the last dimension of this 2-d input" in warned[0]["message"]
    assert wgan.codes("runtime only") == {"TL730", "TL713", "TL755"}


# minGPT's CausalSelfAttention, `att = F.softmax(att, dim=-1)`, sampling from a one-token
# prompt: the first step attends over one key, which is how attention starts, and the key axis
# grows with every token. A head with one output unit stays one, and is still reported.
ATTENTION_SAMPLING = """
import torch
import torch.nn.functional as F
from torch import nn

class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.out = nn.Linear(8, 24), nn.Linear(8, 5)

    def forward(self, x):
        q, k, v = self.qkv(x).split(8, dim=2)
        att = (q.view(1, -1, 2, 4).transpose(1, 2) @ k.view(1, -1, 2, 4).transpose(1, 2).transpose(-2, -1))
        att = F.softmax(att, dim=-1)
        y = (att @ v.view(1, -1, 2, 4).transpose(1, 2)).transpose(1, 2).reshape(1, -1, 8)
        return self.out(y)

torch.manual_seed(0)
model, embed = Attention(), nn.Embedding(5, 8)
with torch.no_grad():
    tokens = torch.zeros(1, 1, dtype=torch.long)
    for _ in range(4):
        logits = model(embed(tokens))[:, -1, :]
        tokens = torch.cat([tokens, torch.multinomial(F.softmax(logits, dim=-1), 1)], dim=1)
head = nn.Linear(8, 1)
for _ in range(3):
    predicted = head(torch.randn(6, 8)).argmax(dim=1)
"""
SOFTMAX_OVER_KEYS, ONE_UNIT_ARGMAX = 13, 26


@pytest.fixture(scope="module")
def attention(tmp_path_factory):
    return run_script(tmp_path_factory.mktemp("attention"), ATTENTION_SAMPLING)


def test_attention_over_one_key_at_the_first_token_is_no_size_one_hazard(attention):
    rows = {f["location"]["row"] for f in attention.findings("runtime only") if f["code"] == "TL733"}
    assert SOFTMAX_OVER_KEYS not in rows, attention.stdout
    assert rows == {ONE_UNIT_ARGMAX}


# PyTorch-GAN's softmax_gan.py: `d_loss.backward(retain_graph=True)`, `optimizer_D.step()`, then
# `g_loss.backward()` through the same discriminator graph: the step edited weights that graph
# saved, and backward fails. On a GPU (and under fake-cuda) Adam updates with
# `torch._foreach_addcdiv_`; the probe once missed it, and the crash was then reported nowhere.
RETAINED_GRAPH = """
import torch
from torch import nn

torch.manual_seed(0)
generator, discriminator = nn.Linear(4, 8), nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
optimizer_G = torch.optim.Adam(generator.parameters(), foreach=True)
optimizer_D = torch.optim.Adam(discriminator.parameters(), foreach=True)
for step in range(2):
    d_fake = discriminator(generator(torch.randn(16, 4)))
    d_loss = torch.exp(-d_fake).sum().log()
    d_loss.backward(retain_graph=True)
    optimizer_D.step()
    g_loss = d_fake.sum()
    g_loss.backward()
    optimizer_G.step()
"""


@pytest.fixture(scope="module")
def retained(tmp_path_factory):
    return run_script(tmp_path_factory.mktemp("retained"), RETAINED_GRAPH)


def test_a_foreach_optimizer_step_that_edits_a_retained_graph_is_named(retained):
    step = line_of(RETAINED_GRAPH, "optimizer_D.step()")
    outcome = retained.report["outcome"]
    # The program raised autograd's own error; torchlint's word on it is the finding.
    assert outcome["status"] == "raised" and "modified by an inplace operation" in outcome["summary"], outcome
    assert "torchlint" not in outcome["summary"]
    (edit,) = retained.findings("runtime only")
    assert (edit["code"], edit["location"]["row"]) == ("TL705", step)
    # The update runs with the probes' dispatch off the stack: it is named by the step.
    assert edit["message"].startswith(f"in-place update by `Adam.step()` at train.py:{step} modified a tensor saved for backward")
    assert retained.returncode == 1


# An in-place edit the probe does not watch (`out=` on a function that is not in-place by
# name) still fails backward with the probe's error: with no line to name, that crash must stay
# the program's error (TL702), not be marked as explained by evidence nobody reported.
UNWATCHED_EDIT = """
import torch

x = torch.randn(4, requires_grad=True)
h = torch.sigmoid(x)
torch.mul(x.detach(), 2, out=h.detach())
h.sum().backward()
"""


def test_a_backward_failure_no_probe_explains_is_still_reported(tmp_path):
    result = run_script(tmp_path, UNWATCHED_EDIT)
    (crash,) = result.findings("runtime only")
    assert (crash["code"], crash["location"]["row"]) == ("TL702", line_of(UNWATCHED_EDIT, "backward()"))
    assert "modified by an inplace operation" in crash["message"] and result.returncode == 1


# nanoGPT's train.py on a machine without CUDA: `dtype = 'float16'`, `GradScaler(enabled=True)`
# and an autocast for "cuda" (here the script's own choice, in nanoGPT a nullcontext): both
# disable themselves ("CUDA is not available"), and the pinned DataLoader has nothing to pin
# for. The run has no mixed precision to be outside of, and torch's warnings describe the
# machine torchlint ran the program on, not the program.
AMP_WITHOUT_CUDA = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda", enabled=True)
loader = DataLoader(TensorDataset(torch.randn(16, 8), torch.randn(16, 1)), batch_size=4, pin_memory=True)
for x, y in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
"""


def test_mixed_precision_that_disabled_itself_on_a_cpu_is_no_finding(tmp_path):
    result = run_script(tmp_path, AMP_WITHOUT_CUDA)
    assert result.report["outcome"]["status"] == "completed", result.stdout[-3000:]
    assert result.findings("runtime only") == [], result.stdout[-3000:]


# PyTorch-GAN's wgan_gp.py: the gradient penalty differentiates the critic at interpolated
# samples with `autograd.grad(..., create_graph=True, retain_graph=True)`; `d_loss.backward()`
# does not run through that retained forward graph, which dies when the penalty function
# returns. After the watched steps the non-finite probe kept the step's last model call (the
# critic at the interpolates) with its output, and so the graph: the critic's `step()` then
# looked like an edit of weights a graph still to be run backward saved (TL705).
GRADIENT_PENALTY = """
import torch
from torch import autograd, nn

torch.manual_seed(0)
critic = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2, inplace=True), nn.Linear(16, 1))
generator = nn.Sequential(nn.Linear(4, 8), nn.Tanh())
optimizer_D = torch.optim.Adam(critic.parameters(), lr=1e-3)
optimizer_G = torch.optim.Adam(generator.parameters(), lr=1e-3)


def gradient_penalty(real, fake):
    alpha = torch.rand(real.size(0), 1)
    mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    scores = critic(mixed)
    grads = autograd.grad(scores, mixed, torch.ones_like(scores), create_graph=True, retain_graph=True)[0]
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


for i in range(8):
    real, z = torch.randn(16, 8), torch.randn(16, 4)
    optimizer_D.zero_grad()
    fake = generator(z)
    d_loss = -critic(real).mean() + critic(fake).mean() + 10 * gradient_penalty(real, fake.detach())
    d_loss.backward()
    optimizer_D.step()
    optimizer_G.zero_grad()
    if i % 2 == 0:
        g_loss = -critic(generator(z)).mean()
        g_loss.backward()
        optimizer_G.step()
"""


def test_a_gradient_penalty_graph_the_program_let_go_of_is_not_kept_past_the_watch(tmp_path):
    result = run_script(tmp_path, GRADIENT_PENALTY, "--watch-steps", "2")
    assert result.report["outcome"]["status"] == "completed", result.stdout[-3000:]
    assert result.findings("runtime only") == [], result.stdout[-3000:]


# PyTorch-GAN's sgan.py: the generator's step unpacks `validity, _ = discriminator(fake)`,
# backpropagates through `validity` only, and keeps `_` (the auxiliary head's output, with
# its graph) until the next iteration; the discriminator's step then updates weights that
# graph saved. Nobody runs backward through it: no edit to report. A second backward through
# a graph whose weights a step changed still fails, and is still named.
UNUSED_SECOND_OUTPUT = """
import torch
from torch import nn


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.adv = nn.Sequential(nn.Linear(16, 1), nn.Sigmoid())
        self.aux = nn.Sequential(nn.Linear(16, 3), nn.Softmax(dim=1))

    def forward(self, x):
        h = self.body(x)
        return self.adv(h), self.aux(h)


torch.manual_seed(0)
critic, generator = Critic(), nn.Linear(4, 8)
optimizer_D = torch.optim.Adam(critic.parameters(), lr=1e-3)
optimizer_G = torch.optim.Adam(generator.parameters(), lr=1e-3)
bce, nll = nn.BCELoss(), nn.NLLLoss()
for i in range(4):
    real, labels = torch.randn(16, 8), torch.randint(0, 3, (16,))
    optimizer_G.zero_grad()
    fake = generator(torch.randn(16, 4))
    validity, _ = critic(fake)
    g_loss = bce(validity, torch.ones(16, 1))
    g_loss.backward()
    optimizer_G.step()
    optimizer_D.zero_grad()
    real_pred, real_aux = critic(real)
    d_loss = bce(real_pred, torch.ones(16, 1)) + nll(torch.log(real_aux), labels)
    d_loss.backward()
    optimizer_D.step()
"""


def test_an_optimizer_step_under_a_graph_nobody_runs_backward_is_no_in_place_edit(tmp_path):
    result = run_script(tmp_path, UNUSED_SECOND_OUTPUT)
    assert result.report["outcome"]["status"] == "completed", result.stdout[-3000:]
    assert result.findings("runtime only") == [], result.stdout[-3000:]


# pytorch/examples' word_language_model builds `nn.TransformerEncoder(layers, nlayers)` with
# torch's default `enable_nested_tensor=True` and `batch_first=False` layers: torch warns that
# inference cannot take the nested-tensor fast path, a note on its own default. minGPT's
# trainer asks for 4 DataLoader workers: on a machine with fewer cores torch warns about the
# machine. Neither is about the program.
TORCH_NOTES = """
import os

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0), 1)
head = nn.Linear(16, 1)
optimizer = torch.optim.SGD([*encoder.parameters(), *head.parameters()], lr=0.01)
workers = (os.cpu_count() or 1) + 1
loader = DataLoader(TensorDataset(torch.randn(8, 5, 16), torch.randn(8, 1)), batch_size=4, num_workers=workers)
for x, y in loader:
    loss = nn.functional.mse_loss(head(encoder(x.transpose(0, 1)).mean(0)), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_torch_notes_on_its_own_defaults_and_on_the_machine_are_no_findings(tmp_path):
    result = run_script(tmp_path, TORCH_NOTES)
    assert result.report["outcome"]["status"] == "completed", result.stdout[-3000:]
    assert result.findings("runtime only") == [], result.stdout[-3000:]


# pytorch/examples' DDP tutorial (`distributed/ddp-tutorial-series`): `F.cross_entropy` on
# `torch.rand` targets of the input's shape, batch after batch. The targets are no class
# probabilities at every step, with other sums each time: one finding at the line, not one per
# batch checked.
FLOAT_TARGETS = """
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Linear(8, 3)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
for step in range(5):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(torch.randn(16, 8)), torch.rand(16, 3))
    loss.backward()
    optimizer.step()
"""


def test_targets_that_are_no_probabilities_are_one_finding_per_line(tmp_path):
    result = run_script(tmp_path, FLOAT_TARGETS)
    found = [f for f in result.findings("runtime only") if f["code"] == "TL740"]
    assert [f["location"]["row"] for f in found] == [line_of(FLOAT_TARGETS, "loss = F.cross_entropy")], result.stdout[-3000:]
    assert "rows do not sum to 1" in found[0]["message"]
