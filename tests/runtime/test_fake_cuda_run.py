"""`torchlint run --device fake-cuda` on whole training scripts: real values, simulated CUDA.

One run per script, shared by the tests that read it (module-scoped fixtures)."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import torchlint_run

pytest.importorskip("torch")

pytestmark = pytest.mark.slow

DEVICE_BUG = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
data = TensorDataset(torch.randn(48, 6), torch.randint(0, 3, (48,)))
loader = DataLoader(data, batch_size=16, shuffle=True)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        scale = torch.ones(x.shape[1])
        return self.fc(x * scale)

model = Net().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    x, y = x.to(device), y.to(device)
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""
CREATED, USED = 15, 16

ACCELERATOR_LOOP = """
import json
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
model.to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
loader = DataLoader(TensorDataset(torch.randn(64, 6), torch.randint(0, 3, (64,))), batch_size=16, shuffle=True)
losses = []
for x, y in loader:
    x, y = x.to(device), y.to(device)
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
torch.save(model.state_dict(), "checkpoint.pt")
state = torch.load("checkpoint.pt", map_location="cpu")
weight = next(model.parameters())
json.dump({
    "device": str(device), "devices": torch.cuda.device_count(), "weight": str(weight.device), "grad": str(weight.grad.device),
    "steps": len(losses), "loaded": sorted({str(t.device) for t in state.values()}),
}, open(sys.argv[1], "w"))
"""

NUMPY_ON_CUDA = """
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
scores = torch.randn(4, 3).to(device)
probs = scores.softmax(1)
print(probs.numpy())
"""


@pytest.fixture(scope="module")
def run_script(tmp_path_factory):
    def run(name: str, source: str, *args: str):
        folder = tmp_path_factory.mktemp(name)
        (folder / "train.py").write_text(textwrap.dedent(source).lstrip("\n"))
        return folder, torchlint_run("train.py", "--device", "fake-cuda", "-q", "--output-format", "json", *args,
                                     cwd=folder, timeout=120)

    return run


@pytest.fixture(scope="module")
def device_bug(run_script):
    return run_script("device_bug", DEVICE_BUG)[1]


@pytest.fixture(scope="module")
def accelerator_loop(run_script):
    folder, result = run_script("accelerator", ACCELERATOR_LOOP, "--fake-devices", "2", "--", "seen.json")
    return result, json.loads((folder / "seen.json").read_text()) if (folder / "seen.json").exists() else None


def test_a_shuffled_dataloader_runs_and_the_device_bug_names_both_lines(device_bug):
    assert device_bug.returncode == 1, device_bug.stderr[-3000:]
    outcome = device_bug.report["outcome"]
    # past the DataLoader's seed `.item()` and into the first forward, where the bug is
    assert outcome["status"] == "raised" and outcome["forward_calls"] == 1
    (finding,) = device_bug.findings("confirmed")
    assert finding["code"] == "TL201" and finding["location"]["row"] == CREATED
    detail = finding["evidence"][0]["detail"]
    assert f"`mul` at train.py:{USED} mixed cuda:0 and cpu" in detail
    assert f"created at train.py:{CREATED} `scale = torch.ones(x.shape[1])`" in detail
    assert not device_bug.findings("runtime only")  # the crash is explained by the evidence


def test_a_script_choosing_its_device_by_torch_accelerator_trains_on_simulated_cuda(accelerator_loop):
    result, seen = accelerator_loop
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert seen == {"device": "cuda", "devices": 2, "weight": "cuda:0", "grad": "cuda:0", "steps": 4, "loaded": ["cpu"]}
    outcome = result.report["outcome"]
    assert outcome["status"] == "completed" and outcome["optimizer_steps"] == 4


def test_item_calls_on_cuda_tensors_are_counted_as_host_syncs(accelerator_loop):
    result, _ = accelerator_loop
    syncs = result.report["outcome"]["host_syncs"]
    # one loss.item() per step; the DataLoader's seed .item() is on a CPU tensor and is no sync
    assert syncs["by_op"] == {"item": 4} and syncs["total"] == 4


def test_numpy_on_a_cuda_tensor_confirms_tl202(run_script):
    _, result = run_script("numpy", NUMPY_ON_CUDA)
    assert result.returncode == 1
    assert result.report["outcome"]["status"] == "raised"
    (finding,) = result.findings("confirmed")
    assert finding["code"] == "TL202" and finding["location"]["row"] == 6
    assert "can't convert cuda:0 device type tensor to numpy" in finding["evidence"][0]["detail"]
    assert not result.findings("runtime only")


# The load names the file differently from the save, so TL301 cannot tell statically that
# this process wrote it (a same-text save before the load is a round trip it leaves alone).
RESUME = """
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Linear(4, 2).to(device)
torch.save(model.state_dict(), "model.pt")
state = torch.load("./model.pt")
model.load_state_dict(state)
assert next(iter(state.values())).is_cuda
"""


def test_a_checkpoint_saved_from_simulated_cuda_confirms_tl301(run_script):
    # the file carries cuda:0 location tags, as a GPU run's would; loaded back on simulated CUDA
    _, result = run_script("resume", RESUME)
    assert result.report["outcome"]["status"] == "completed", result.stderr[-3000:]
    confirmed = {(f["code"], f["location"]["row"]): f["evidence"][0]["detail"] for f in result.findings("confirmed")}
    assert list(confirmed) == [("TL301", 7)]
    assert "holds 2 storages on cuda:0" in confirmed[("TL301", 7)]


COMPILED = """
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    loss = model(torch.randn(4, 8, device=device)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_compile_checks_accuracy_but_times_nothing_on_simulated_cuda(run_script):
    _, result = run_script("compile", COMPILED, "--compile=eager")
    assert result.returncode == 0, result.stderr[-3000:]
    compiled = result.report["compile"]
    assert compiled["accuracy"]["ok"] is True
    assert compiled["speed"] is None and "runs on the CPU, not a GPU" in compiled["speed_skipped"]


# As pytorch/examples' word_language_model: save the best model while training, load it back
# at the end through open files. TL301 leaves the round trip alone; so must the run (no TL706).
ROUND_TRIP = """
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Linear(4, 2).to(device)
with open("best.pt", "wb") as f:
    torch.save(model, f)
with open("best.pt", "rb") as f:
    model = torch.load(f, weights_only=False)
assert next(model.parameters()).is_cuda
"""


def test_a_checkpoint_this_run_saved_and_loads_back_is_no_finding(run_script):
    _, result = run_script("round_trip", ROUND_TRIP)
    assert result.report["outcome"]["status"] == "completed", result.stderr[-3000:]
    assert result.findings() == [] and result.returncode == 0
