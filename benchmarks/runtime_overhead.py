"""Overhead of `torchlint run`'s probes on a small CNN training step (CPU).

    python benchmarks/runtime_overhead.py [--steps 30] [--repeats 5]

Times the same training step plain, under the device + loss + autograd probes (installed
exactly as the child of `torchlint run` installs them, with the step counter), under
`torch.autograd.detect_anomaly()` for comparison, and on simulated CUDA (`--device
fake-cuda`: the model and data placed on "cuda"), alone and under the probes. The three are interleaved and repeated and
the median step time of each is reported, because a shared machine is noisy. Target: the
probes at most 1.5x the plain run.
"""

from __future__ import annotations

import argparse
import contextlib
import warnings
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from torchlint.plugins.probes.autograd.probe import AutogradProbe  # noqa: E402
from torchlint.plugins.probes.device.probe import DeviceProbe  # noqa: E402
from torchlint.plugins.probes.loss.probe import LossProbe  # noqa: E402
from torchlint.runtime.devices import CpuMode, FakeCudaMode  # noqa: E402
from torchlint.runtime.events import EventWriter  # noqa: E402
from torchlint.runtime.frames import default_classifier  # noqa: E402
from torchlint.runtime.probing import ProbeContext, ProbeDispatch  # noqa: E402
from torchlint.runtime.steps import StepCounter  # noqa: E402


# Small on purpose: the probes cost Python time per operation, so a model whose kernels are
# cheap shows their overhead at its worst (a bigger model hides it behind compute).
BATCH = 16


def small_cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 4 * 4, 32), nn.ReLU(), nn.Linear(32, 10),
    )


def train(model: nn.Module, optimizer: torch.optim.Optimizer, steps: int, device: str = "cpu") -> float:
    """Seconds per step, with data made inside the loop as a real script would."""
    started = time.perf_counter()
    for _ in range(steps):
        x = torch.randn(BATCH, 3, 16, 16).to(device)
        y = torch.randint(0, 10, (BATCH,)).to(device)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return (time.perf_counter() - started) / steps


@contextlib.contextmanager
def probes_installed(events_path: str, mode=None):
    mode = mode or CpuMode()
    ctx = ProbeContext(EventWriter(events_path), default_classifier(), mode, progress=lambda message: None)
    probes = [DeviceProbe(ctx), LossProbe(ctx), AutogradProbe(ctx)]
    counter = StepCounter(None, lambda *args: None)
    for probe in probes:
        probe.install()
    counter.install()
    try:
        # the device mode below the probes, as in the child of `torchlint run`
        with mode.active(), ProbeDispatch(probes, ctx):
            yield
    finally:
        counter.uninstall()
        for probe in reversed(probes):
            probe.uninstall()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 keeps a shared machine's noise down)")
    options = parser.parse_args()
    torch.set_num_threads(options.threads)

    warnings.filterwarnings("ignore", message="Anomaly Detection has been enabled")
    torch.manual_seed(0)
    model = small_cnn()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    train(model, optimizer, 5)  # warm-up

    events = os.path.join(tempfile.mkdtemp(prefix="torchlint-bench-"), "events.jsonl")
    setups = {
        "plain": (contextlib.nullcontext, "cpu"),
        "probes (device+loss+autograd)": (lambda: probes_installed(events), "cpu"),
        "detect_anomaly": (torch.autograd.detect_anomaly, "cpu"),
        "fake-cuda, no probes": (FakeCudaMode().active, "cuda"),
        "fake-cuda + probes": (lambda: probes_installed(events, FakeCudaMode()), "cuda"),
    }
    times: dict[str, list[float]] = {name: [] for name in setups}
    for _ in range(options.repeats):
        for name, (setup, device) in setups.items():
            with setup():
                model.to(device)  # on "cuda" the simulation places the parameters (and later the optimizer state)
                times[name].append(train(model, optimizer, options.steps, device))
                model.to("cpu")

    plain = statistics.median(times["plain"])
    print(f"small CNN training step on CPU, batch {BATCH}x3x16x16, {torch.get_num_threads()} threads, "
          f"torch {torch.__version__}; median of {options.repeats} x {options.steps} steps")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"  {name:<32} {median * 1000:8.2f} ms/step   {median / plain:5.2f}x")


if __name__ == "__main__":
    main()
