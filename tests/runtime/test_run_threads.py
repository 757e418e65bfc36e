"""Steps and forward calls are the target's main thread's; `--steps` stops the whole target
quietly, however busy its other threads are."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from conftest import torchlint_run  # noqa: E402

pytestmark = pytest.mark.slow

# A training loop in the main thread; a background thread that trains its own model forever.
TRAINER = """
import sys, threading
import torch

def background():
    watcher = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(watcher.parameters(), lr=0.01)
    while True:
        optimizer.zero_grad()
        watcher(torch.randn(2, 3)).sum().backward()
        optimizer.step()

threading.Thread(target=background, daemon=sys.argv[2] == "daemon").start()
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(int(sys.argv[1])):
    loss = model(torch.randn(8, 3)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


@pytest.fixture
def trainer(write):
    return write("train.py", TRAINER)


def test_a_background_thread_does_not_add_to_the_counts(trainer, tmp_path):
    result = torchlint_run("train.py", "-q", "--output-format", "json", "--", "5", "daemon", cwd=tmp_path, timeout=90)
    outcome = result.report["outcome"]
    assert (outcome["status"], outcome["optimizer_steps"], outcome["forward_calls"]) == ("completed", 5, 5)


def test_steps_stop_every_thread_of_the_target_without_traceback_noise(trainer, tmp_path):
    # The background thread is not a daemon: without --steps this program would never exit.
    result = torchlint_run("train.py", "--steps", "3", "--timeout", "60", "--output-format", "json", "--", "1000000",
                           "thread", cwd=tmp_path, timeout=90)
    outcome = result.report["outcome"]
    assert (outcome["status"], outcome["optimizer_steps"], outcome["forward_calls"]) == ("steps-reached", 3, 3)
    assert result.returncode == 0
    assert "Traceback" not in result.stderr and "StepLimitReached" not in result.stderr, result.stderr[-3000:]
    assert outcome["seconds"] < 30
