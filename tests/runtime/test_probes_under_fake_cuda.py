"""The loss, autograd and device probes in one fake-cuda run find what they find on the CPU,
plus the device bug only CUDA placement shows. One run per device, shared."""

from __future__ import annotations

import textwrap

import pytest
from conftest import torchlint_run

pytest.importorskip("torch")

pytestmark = pytest.mark.slow

SCRIPT = """
import torch
import torch.nn.functional as F
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(16, 3)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 1, 4, 4, device=device)
y = torch.randint(0, 3, (8,), device=device)
for step in range(3):
    probs = F.softmax(model(x), dim=1)
    loss = F.cross_entropy(probs, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    predicted = model(x).argmax(1)
h = torch.sigmoid(model(x))
h += 1
try:
    h.sum().backward()
except RuntimeError as exc:
    open("caught.txt", "w").write(str(exc))
noise = torch.randn(8, 3)
print((model(x) + noise).sum().item())
"""
SOFTMAX_INTO_LOSS, OPTIMIZER_STEP, INPLACE, NOISE, MIXED = 12, 15, 18, 23, 24


@pytest.fixture(scope="module", params=["cpu", "fake-cuda"])
def run(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    (folder / "train.py").write_text(textwrap.dedent(SCRIPT).lstrip("\n"))
    result = torchlint_run("train.py", "--device", request.param, "-q", "--output-format", "json", cwd=folder, timeout=120)
    return request.param, result, folder


def test_loss_and_autograd_findings_are_the_same_on_both_devices(run):
    device, result, _ = run
    confirmed = {(f["code"], f["location"]["row"]): f["evidence"][0]["detail"] for f in result.findings("confirmed")}
    # TL201 reads the script's own statements: `noise` meets the moved model's output; only
    # simulated CUDA placement can confirm it
    device_bug = {("TL201", NOISE)} if device == "fake-cuda" else set()
    assert set(confirmed) == {("TL101", SOFTMAX_INTO_LOSS), ("TL103", INPLACE)} | device_bug, device
    # values exist under fake-cuda too, so the softmax tag is backed by a value check
    assert "checked: values in [0, 1]" in confirmed[("TL101", SOFTMAX_INTO_LOSS)]
    assert f"modified a tensor saved for backward by the operation at train.py:{INPLACE - 1}" in confirmed[("TL103", INPLACE)]


def test_an_eval_pass_with_grad_on_is_not_blamed_on_the_next_optimizer_step(run):
    # `predicted = model(x)` keeps no graph; the autograd probe once kept it alive through a
    # reference cycle (conv + relu) and reported the next `optimizer.step()` as modifying
    # the weight that graph had saved
    _, result, _ = run
    assert not [f for f in result.findings() if f["location"]["row"] == OPTIMIZER_STEP]


def test_only_simulated_cuda_shows_the_device_bug(run):
    device, result, _ = run
    outcome = result.report["outcome"]
    if device == "cpu":
        assert outcome["status"] == "completed" and not result.findings("runtime only")
        return
    assert outcome["status"] == "raised" and outcome["optimizer_steps"] == 3
    # the static TL201 finding at the factory is confirmed by the mix at MIXED: no separate
    # runtime-only finding for the same bug
    assert not result.findings("runtime only")
    (finding,) = [f for f in result.findings("confirmed") if f["code"] == "TL201"]
    assert finding["location"]["row"] == NOISE
    assert f"train.py:{MIXED}" in str(finding["evidence"])


def test_the_error_the_program_catches_names_the_tensor_type_it_would_on_its_device(run):
    """Saved-tensor hooks replace autograd's own version check; the message the program reads
    is autograd's own words (torchlint names the edit after the traceback, never inside it),
    and says `torch.cuda.FloatTensor` for a tensor on the (simulated) GPU, as CUDA's does."""
    device, _, folder = run
    caught = (folder / "caught.txt").read_text()
    assert caught.startswith("one of the variables needed for gradient computation has been modified by an inplace operation")
    assert "torchlint" not in caught and "Hint: enable anomaly detection" in caught
    expected = "torch.cuda.FloatTensor" if device == "fake-cuda" else "torch.FloatTensor"
    assert f"[{expected} [8, 3]]" in caught and "is at version 1; expected version 0 instead." in caught, caught
