"""Overhead of `torchlint run`'s default probes on realistic training steps.

    python benchmarks/runtime_overhead.py [--steps 20] [--repeats 5] [--device cpu|cuda|fake-cuda]
                                          [--workloads tiny-cnn,cnn,transformer] [--each] [--reference]

Every probe a plain `torchlint run` installs (found through the plugins, as the child of
`torchlint run` finds them: new probes are measured as soon as they are registered) is
installed around the same training step, which also runs plain and under
`torch.autograd.detect_anomaly()` for comparison. Four numbers per workload, each the median
of interleaved repeats (a shared machine is noisy), as a multiple of the plain step:

  watched   a step while the probes watch every torch call (`--watch-steps all`)
  after     a step after the default watch window (`--watch-steps 10`): module, optimizer
            and error hooks only
  run       a whole run of --run-steps steps from a new model, the window included, as
            `torchlint run` runs a training script
  anomaly   a step under `torch.autograd.detect_anomaly()`

With --reference, two more whole runs, as multiples of the plain run (and of `run`):

  record    `run` plus the reference probe recording (`--save-reference`)
  check     `run` plus the reference probe checking against what `record` wrote (`--reference`)

Workloads:
  tiny-cnn        2 conv layers, batch 16x3x16x16: kernels so cheap that the probes' Python
                  time per operation shows at its worst
  cnn             a ResNet-style CNN (4 stages of 2 residual blocks), batch 64x3x32x32
  transformer     4 encoder layers, d_model 256, batch 32 x 128 tokens, classification head
  cnn-b4,         the same models at batch 4 (4 x 16 tokens): on a CPU, steps as launch-bound
  transformer-b4  as the full batches are on a GPU (Python launching kernels is the step)

Target (issue 14): all default probes together at most 1.3x a plain run on a realistic step.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from torchlint.pluginmanager import make_plugin_manager  # noqa: E402
from torchlint.runtime.child.main import _chosen_probes  # noqa: E402
from torchlint.runtime.devices.modes import CpuMode, CudaMode, FakeCudaMode  # noqa: E402
from torchlint.runtime.events import EventWriter  # noqa: E402
from torchlint.runtime.frames import default_classifier  # noqa: E402
from torchlint.runtime.child.probing import ProbeContext, ProbeDispatch  # noqa: E402
from torchlint.runtime.child.steps import StepCounter  # noqa: E402


class Block(nn.Module):
    def __init__(self, channels: int, stride: int = 1) -> None:
        super().__init__()
        out = channels * stride
        self.conv1 = nn.Conv2d(channels, out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out)
        self.conv2 = nn.Conv2d(out, out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out)
        self.skip = nn.Sequential() if stride == 1 else nn.Sequential(nn.Conv2d(channels, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.skip(x))


def cnn() -> nn.Module:
    layers = [nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU()]
    channels = 32
    for stage in range(4):
        stride = 1 if stage == 0 else 2
        layers += [Block(channels, stride), Block(channels * stride)]
        channels *= stride
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, 10))


def tiny_cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 4 * 4, 32), nn.ReLU(), nn.Linear(32, 10),
    )


class Classifier(nn.Module):
    def __init__(self, vocab: int = 1000, d_model: int = 256, layers: int = 4) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        layer = nn.TransformerEncoderLayer(d_model, 8, 4 * d_model, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, 10)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)).mean(dim=1))


#: name -> (model factory, batch factory(device) -> (inputs, labels))
WORKLOADS = {
    "tiny-cnn": (tiny_cnn, lambda device: (torch.randn(16, 3, 16, 16).to(device), torch.randint(0, 10, (16,)).to(device))),
    "cnn": (cnn, lambda device: (torch.randn(64, 3, 32, 32).to(device), torch.randint(0, 10, (64,)).to(device))),
    "transformer": (Classifier, lambda device: (torch.randint(0, 1000, (32, 128)).to(device), torch.randint(0, 10, (32,)).to(device))),
    "cnn-b4": (cnn, lambda device: (torch.randn(4, 3, 32, 32).to(device), torch.randint(0, 10, (4,)).to(device))),
    "transformer-b4": (Classifier, lambda device: (torch.randint(0, 1000, (4, 16)).to(device), torch.randint(0, 10, (4,)).to(device))),
}
#: The window `torchlint run` watches by default (`--watch-steps`).
WATCH_STEPS = 10


#: The clock steps are timed with: wall time, or (`--clock thread`, CPU with one torch thread)
#: the CPU time of the thread running the step, which other processes' load does not inflate.
CLOCK = time.perf_counter


def train(model: nn.Module, optimizer: torch.optim.Optimizer, batch, steps: int, device: str) -> float:
    """Seconds per step, with the batch made inside the loop as a real script would, and the
    loss read once per step for logging, as nearly every script does."""
    if device == "cuda":
        torch.cuda.synchronize()
    started = CLOCK()
    for _ in range(steps):
        x, y = batch(device)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss.item()
    if device == "cuda":
        torch.cuda.synchronize()
    return (CLOCK() - started) / steps


def default_probes() -> list[type]:
    pm = make_plugin_manager()
    return _chosen_probes([cls for group in pm.hook.torchlint_probes() for cls in (group or ())], {})


def optional_probe(name: str) -> type:
    """A probe a plain run leaves out (it needs an option), by name."""
    pm = make_plugin_manager()
    return next(cls for group in pm.hook.torchlint_probes() for cls in (group or ()) if cls.name == name)


@contextlib.contextmanager
def probes_installed(classes: list[type], events_path: str, mode, watch_steps: int | None = None,
                     options: dict | None = None):
    """As the child of `torchlint run` installs them: every probe, the step counter that tells
    the dispatch when a step ends, the device mode below the probes' dispatch. With
    ``options`` (those of an optional probe), ``after_run`` too, after the timed steps."""
    ctx = ProbeContext(EventWriter(events_path), default_classifier(), mode, progress=lambda message: None)
    ctx.options = dict(options or {})
    ctx.watch_steps = watch_steps
    probes = [cls(ctx) for cls in classes]
    dispatch = ProbeDispatch(probes, ctx)
    counter = StepCounter(None, lambda *args: None, dispatch.advance)
    for probe in probes:
        probe.install()
    counter.install()
    try:
        with mode.active(), dispatch:
            yield
    finally:
        counter.uninstall()
        for probe in reversed(probes):
            probe.uninstall()
        if options:
            for probe in probes:
                probe.after_run()


@contextlib.contextmanager
def under_anomaly_detection(mode):
    with mode.active(), torch.autograd.detect_anomaly():
        yield


def measure(name: str, device_mode: str, steps: int, repeats: int, events: str, classes: list[type],
            run_steps: int, reference: bool = False) -> dict[str, float]:
    """Seconds per step of each setup (median over the repeats)."""
    factory, batch = WORKLOADS[name]
    device = "cpu" if device_mode == "cpu" else "cuda"
    mode = {"cpu": CpuMode, "cuda": CudaMode, "fake-cuda": FakeCudaMode}[device_mode]()
    # (setup, watch steps, steps run before the timed ones)
    setups = {
        "plain": (mode.active, 2),
        "watched": (lambda: probes_installed(classes, events, mode, None), 2),
        "after": (lambda: probes_installed(classes, events, mode, WATCH_STEPS), WATCH_STEPS + 2),
        "anomaly": (lambda: under_anomaly_detection(mode), 2),
    }
    runs = {
        "plain run": mode.active,
        "run": lambda: probes_installed(classes, events, mode, WATCH_STEPS),
    }
    if reference:
        # Recorded first in each repeat, so the check reads the reference of the same workload.
        saved = os.path.join(os.path.dirname(events), f"{name}-reference.json")
        probe = optional_probe("reference")
        runs["record"] = lambda: probes_installed([*classes, probe], events, mode, WATCH_STEPS, {"save_reference": saved})
        runs["check"] = lambda: probes_installed([*classes, probe], events, mode, WATCH_STEPS, {"reference": saved})
    times: dict[str, list[float]] = {setup: [] for setup in (*setups, *runs)}
    for _ in range(repeats):
        for setup, (enter, warmup) in setups.items():
            with enter():
                # Made inside the setup, as the program would be: fake-cuda places what is
                # created while it is active, and the probes see the model and optimizer made.
                torch.manual_seed(0)
                model = factory().to(device)
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
                train(model, optimizer, batch, warmup, device)  # allocator, kernels, optimizer state; the window
                times[setup].append(train(model, optimizer, batch, steps, device))
        for setup, enter in runs.items():
            with enter():
                torch.manual_seed(0)
                model = factory().to(device)
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
                times[setup].append(train(model, optimizer, batch, run_steps, device))
    return {setup: statistics.median(samples) for setup, samples in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 keeps a shared machine's noise down)")
    parser.add_argument("--device", choices=("cpu", "cuda", "fake-cuda"), default="cpu")
    parser.add_argument("--workloads", default="tiny-cnn,cnn,transformer")
    parser.add_argument("--run-steps", type=int, default=100, help="steps of the whole run timed (window included)")
    parser.add_argument("--each", action="store_true", help="also time each probe alone, to see which ones cost")
    parser.add_argument("--reference", action="store_true",
                        help="also time whole runs recording a reference (--save-reference) and checking against it (--reference)")
    parser.add_argument("--clock", choices=("wall", "thread"), default="wall",
                        help="thread: the stepping thread's CPU time (CPU, one thread: steady on a loaded machine)")
    options = parser.parse_args()
    if options.clock == "thread":
        if options.device != "cpu" or options.threads != 1:
            parser.error("--clock thread times one thread's CPU time: it needs --device cpu and --threads 1")
        global CLOCK
        CLOCK = time.thread_time
    torch.set_num_threads(options.threads)
    warnings.filterwarnings("ignore", message="Anomaly Detection has been enabled")
    warnings.filterwarnings("ignore", message=".*enable_nested_tensor.*")
    classes = default_probes()
    events = os.path.join(tempfile.mkdtemp(prefix="torchlint-bench-"), "events.jsonl")
    print(f"torch {torch.__version__}, --device {options.device}, {torch.get_num_threads()} thread(s), {options.clock} clock; "
          f"median of {options.repeats} x {options.steps} steps; runs of {options.run_steps} steps; "
          f"probes: {', '.join(cls.name for cls in classes)}")
    more = f" {'record':>8} {'check':>8}  (record, check / run)" if options.reference else ""
    print(f"  {'workload':<16} {'plain ms/step':>14} {'watched':>8} {'after':>8} {'run':>8} {'anomaly':>8}{more}")
    for name in options.workloads.split(","):
        result = measure(name, options.device, options.steps, options.repeats, events, classes, options.run_steps,
                         options.reference)
        plain = result["plain"]
        row = (f"  {name:<16} {plain * 1000:>14.2f} {result['watched'] / plain:>7.2f}x {result['after'] / plain:>7.2f}x "
               f"{result['run'] / result['plain run']:>7.2f}x {result['anomaly'] / plain:>7.2f}x")
        if options.reference:
            row += (f" {result['record'] / result['plain run']:>7.2f}x {result['check'] / result['plain run']:>7.2f}x"
                    f"  ({result['record'] / result['run']:.2f}x, {result['check'] / result['run']:.2f}x)")
        print(row)
        if options.each:
            for cls in classes:
                alone = measure(name, options.device, options.steps, options.repeats, events, [cls], options.run_steps)
                print(f"    {cls.name:<14} alone: watched {alone['watched'] / alone['plain']:.2f}x, "
                      f"after {alone['after'] / alone['plain']:.2f}x")


if __name__ == "__main__":
    main()
