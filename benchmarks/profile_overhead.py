"""What `torchlint run --profile` costs over the same `torchlint run` without it.

A small CNN trains for STEPS optimizer steps on CPU. Each configuration runs REPEATS times,
alternating, and the medians are compared:

- program time: the target's own run in the child (the report's outcome seconds), which
  includes the profiled window (5 steps, with_stack, line and module ranges);
- wall time: the whole command, which adds exporting the trace and attributing it.

Target (issue 4): --profile <= 1.2x the plain run.

    python benchmarks/profile_overhead.py [--steps 40] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 8 * 8, 128), nn.ReLU(), nn.Linear(128, 10),
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for step in range(10_000):
        x, y = torch.randn(64, 3, 32, 32), torch.randint(0, 10, (64,))
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""")


def run(script: Path, steps: int, extra: list[str]) -> tuple[float, float]:
    started = time.perf_counter()
    # One intra-op thread: on a shared 2-core machine, spinning OpenMP threads make timings noise.
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    proc = subprocess.run([sys.executable, "-m", "torchlint", "run", str(script), "--steps", str(steps), "-q",
                           "--output-format", "json", *extra], capture_output=True, text=True, cwd=script.parent, env=env)
    wall = time.perf_counter() - started
    report = json.loads(proc.stdout)
    return report["outcome"]["seconds"], wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "train.py"
        script.write_text(SCRIPT)
        plain, profiled = [], []
        for _ in range(args.repeats):
            plain.append(run(script, args.steps, []))
            profiled.append(run(script, args.steps, ["--profile"]))
            print(f"plain {plain[-1][0]:.2f} s / {plain[-1][1]:.2f} s, --profile {profiled[-1][0]:.2f} s / {profiled[-1][1]:.2f} s",
                  file=sys.stderr)
    for label, index in (("program time", 0), ("wall time", 1)):
        a = statistics.median(r[index] for r in plain)
        b = statistics.median(r[index] for r in profiled)
        print(f"{label:>13}: plain {a:6.2f} s, --profile {b:6.2f} s: {b / a:.2f}x")
    print(f"({args.steps} optimizer steps of a small CNN, batch 64, 5 profiled; median of {args.repeats})")


if __name__ == "__main__":
    main()
