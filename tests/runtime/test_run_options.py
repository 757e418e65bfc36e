"""--steps, script arguments and folder semantics, entries, device modes, quiet and JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from conftest import EXAMPLES, ROOT, torchlint_run  # noqa: E402

pytestmark = pytest.mark.slow


def test_steps_stop_an_endless_training_loop_that_sees_its_own_argv(write, tmp_path):
    script = write("project/train.py", """
        import json, os, sys
        import torch
        json.dump({"argv": sys.argv, "cwd": os.getcwd(), "path0": sys.path[0]}, open(sys.argv[1], "w"))
        model = torch.nn.Linear(3, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        while True:
            loss = model(torch.randn(8, 3)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    """)
    result = torchlint_run("project/train.py", "--steps", "2", "--output-format", "json", "--", "seen.json", "--lr", "1",
                           cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    outcome = result.report["outcome"]
    assert (outcome["status"], outcome["optimizer_steps"]) == ("steps-reached", 2)
    assert "torchlint: step 2/2" in result.stderr
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen == {"argv": [str(script), "seen.json", "--lr", "1"], "cwd": str(tmp_path), "path0": str(script.parent)}


def test_steps_count_forward_calls_when_there_is_no_optimizer(write, tmp_path):
    write("infer.py", """
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())
        while True:
            model(torch.randn(2, 3))
    """)
    result = torchlint_run("infer.py", "--steps", "3", "-q", "--output-format", "json", cwd=tmp_path)
    assert result.returncode == 0
    assert result.report["outcome"]["forward_calls"] == 3
    assert "torchlint:" not in result.stderr  # -q: no progress


def test_entry_runs_one_forward_and_backward_under_fake_cuda(write, tmp_path):
    write("models.py", """
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)

            def forward(self, x):
                bias = torch.ones(x.shape[0], 4)
                return self.fc(x + bias)

        def build():
            return Net(), (torch.randn(3, 4),)
    """)
    result = torchlint_run("models.py:build", "--device", "fake-cuda", "-q", "--output-format", "json", cwd=tmp_path)
    assert result.returncode == 1
    (finding,) = result.findings("confirmed")
    assert finding["code"] == "TL201" and finding["location"]["row"] == 10
    assert "`add` at models.py:11 mixed cuda:0 and cpu" in finding["evidence"][0]["detail"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_a_gpu_points_to_fake_cuda(write, tmp_path):
    write("train.py", "print('never runs')\n")
    result = torchlint_run("train.py", "--device", "cuda", cwd=tmp_path)
    assert result.returncode == 2
    assert "--device fake-cuda" in result.stderr and "never runs" not in result.stderr


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_real_cuda_confirms_the_device_example():
    result = torchlint_run(str(EXAMPLES / "device" / "buggy" / "train.py"), "--device", "cuda", "-q",
                           "--output-format", "json", cwd=ROOT)
    assert result.returncode == 1
    assert result.codes("confirmed") == {"TL201"}


def test_a_folder_named_torchlint_next_to_the_script_is_not_imported_as_torchlint(write, tmp_path):
    # `python -m` would put the script's folder first on sys.path and import this instead.
    (tmp_path / "torchlint").mkdir()
    (tmp_path / "torchlint" / "__init__.py").write_text("raise ImportError('the user folder was imported')\n")
    write("train.py", """
        import json, sys
        import torch
        json.dump([sys.argv[1:], torch.ones(2).sum().item()], open("seen.json", "w"))
    """)
    # The console script, as a user types it (`python -m torchlint` itself would import the folder).
    script = Path(sys.executable).with_name("torchlint")
    if not script.exists():
        pytest.skip("the torchlint console script is not installed next to this Python")
    proc = subprocess.run([str(script), "run", "train.py", "-q", "--output-format", "json", "--", "--epochs", "1"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert json.loads(proc.stdout)["outcome"]["status"] == "completed", proc.stderr[-2000:]
    assert json.loads((tmp_path / "seen.json").read_text()) == [["--epochs", "1"], 2.0]
