"""Processes the program starts itself run without probes (and, under fake-cuda, without the
simulated GPU): the report says so, and a failed one is a TL702 at the line that started it,
not a quiet "completed"."""

from __future__ import annotations

import textwrap

import pytest

from conftest import torchlint_run

pytest.importorskip("torch")

HOGWILD = """
import torch
import torch.multiprocessing as mp
from torch import nn


def train(model, device):
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        loss = model(torch.randn(4, 8, device=device)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = nn.Linear(8, 2)
    model.share_memory()
    mp.set_start_method("spawn")
    workers = [mp.Process(target=train, args=(model, device)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
"""
START = 23

LOADER = """
import torch
from torch.utils.data import DataLoader, TensorDataset

data = TensorDataset(torch.randn(8, 3), torch.randn(8, 1))
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in DataLoader(data, batch_size=4, num_workers=1):
    loss = (model(x) - y).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def _write(folder, text):
    (folder / "train.py").write_text(textwrap.dedent(text).lstrip("\n"))


def test_training_processes_that_fail_under_fake_cuda_are_a_tl702_at_their_start(tmp_path):
    _write(tmp_path, HOGWILD)
    run = torchlint_run("train.py", "--device", "fake-cuda", "--output-format", "json", cwd=tmp_path, timeout=240)
    outcome = run.report["outcome"]
    assert "2 processes it started (at train.py:23) ran without torchlint's probes" in outcome["summary"], outcome
    (failed,) = run.findings("runtime only")
    assert (failed["code"], failed["location"]["row"]) == ("TL702", START)
    assert "2 of the 2 processes the program started at train.py:23 exited with an error" in failed["message"]
    assert "under --device fake-cuda such a process sees no CUDA" in failed["message"]
    assert run.returncode == 1


def test_processes_that_train_fine_are_noted_and_dataloader_workers_are_not(tmp_path):
    _write(tmp_path, HOGWILD)
    run = torchlint_run("train.py", "--device", "cpu", "--output-format", "json", cwd=tmp_path, timeout=240)
    assert "ran without torchlint's probes" in run.report["outcome"]["summary"]
    assert run.findings("runtime only") == [] and run.returncode == 0
    loader = tmp_path / "loader"
    loader.mkdir()
    _write(loader, LOADER)
    run = torchlint_run("train.py", "--device", "cpu", "--output-format", "json", cwd=loader, timeout=240)
    assert run.report["outcome"]["status"] == "completed" and "process" not in run.report["outcome"]["summary"]
