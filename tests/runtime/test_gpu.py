"""On a real GPU (`--device cuda`): what fake-cuda simulates, checked against CUDA itself.
Skipped without a GPU; CI has none, so these run where one is lent (`pytest -m gpu`)."""

from __future__ import annotations

import pytest

from conftest import EXAMPLES, ROOT, torchlint_run

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.gpu, pytest.mark.slow,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def run_example(*parts: str, args: tuple[str, ...] = ()):
    return torchlint_run(str(EXAMPLES.joinpath(*parts)), "--device", "cuda", "-q", "--output-format", "json", *args,
                         cwd=ROOT, timeout=300)


def test_syncs_are_counted_and_timed_on_the_gpu():
    (finding,) = [f for f in run_example("syncs", "buggy", "train.py").findings("runtime only") if f["code"] == "TL734"]
    assert finding["location"]["row"] == 22
    assert "at least 64 times in every optimizer step" in finding["message"]
    assert "ms per step for the GPU" in finding["message"]
    assert finding["evidence"][0]["data"]["waited_ms"] > 0


def test_one_sync_per_step_is_silent_on_the_gpu():
    assert "TL734" not in {f["code"] for f in run_example("syncs", "fixed", "train.py").findings()}


#: The bundled buggy programs and what they give on the CPU (tests/runtime/test_<probe>.py):
#: the same findings, at the same lines, on a real GPU.
ON_THE_CPU = {
    ("memory", "buggy", "train.py"): {("TL601", "confirmed", 38), ("TL737", "runtime only", 44)},
    ("nonfinite", "buggy", "train.py"): {("TL735", "runtime only", 20)},
    ("nonfinite", "buggy", "pairwise_distance.py"): {("TL736", "runtime only", 20)},
    ("broadcast", "buggy", "train.py"): {("TL739", "runtime only", 21), ("TL739", "runtime only", 30)},
    ("dataloader", "buggy", "train.py"): {("TL741", "runtime only", 33)},
}


@pytest.mark.parametrize("parts", sorted(ON_THE_CPU), ids=lambda parts: "/".join(parts[::2]))
def test_the_health_probes_find_on_the_gpu_what_they_find_on_the_cpu(parts):
    findings = run_example(*parts).findings()
    assert {(f["code"], f["status"], f["location"]["row"]) for f in findings} == ON_THE_CPU[parts]


OUT_OF_MEMORY = """import torch
from torch import nn

model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(8):
    x = torch.randn(2 ** (20 + step), 1024, device="cuda")  # the batch doubles every step
    loss = model(x).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_running_out_of_gpu_memory_is_explained(tmp_path):
    (tmp_path / "train.py").write_text(OUT_OF_MEMORY)
    result = torchlint_run("train.py", "--device", "cuda", "-q", "--output-format", "json", cwd=tmp_path, timeout=300)
    assert result.returncode == 1
    (finding,) = [f for f in result.findings() if f["code"] == "TL738"]
    assert finding["location"]["row"] in (7, 8, 10)  # the allocation, the forward or the backward that ran out
    assert "TL702" not in {f["code"] for f in result.findings()}  # explained, not a bare crash


def test_an_nccl_ddp_script_runs_on_the_gpu_with_nccl_itself():
    """One rank, as the machine may have one GPU: NCCL itself, where fake-cuda runs it as gloo."""
    result = torchlint_run("train.py", "--device", "cuda", "--nproc-per-node", "1", "--timeout", "150",
                           "--output-format", "json", cwd=ROOT / "examples" / "distributed" / "runtime" / "nccl_ddp",
                           timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    outcome = result.report["outcome"]
    assert result.findings() == [] and outcome["optimizer_steps"] == 2
    assert not outcome.get("distributed_notes")  # nothing stood in for NCCL
    assert "tensor([1., 1.], device='cuda:0')" in result.stderr  # one rank's all_reduce of ones


def test_the_silent_training_errors_are_caught_on_the_gpu():
    """benchmarks/silent_errors.py on CUDA: every single-process program caught, every fixed twin
    clean, as on the CPU (the script says which programs cannot run on one GPU, and why)."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "silent_errors.py"), "--device", "cuda", "-j", "6"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert " 0 missed, 0/" in proc.stdout
