"""`torchlint run` on real training programs: what each run shows, and its cost.

    python benchmarks/real_programs.py --examples PATH [--python PY] [--repeats 3] [--only mnist,vae]

PATH is a checkout of pytorch/examples (not copied here). The programs download their data;
this writes small stand-ins instead, in the formats they read: random MNIST digits in
torchvision's raw IDX files (320 training images unless ``--mnist-train``, 128 test images),
a tiny word corpus for
word_language_model, and the sine waves time_sequence_prediction generates itself. Each
program then runs with the same arguments three ways, interleaved and repeated:

* plain ``python`` (the CPU: the programs pick it when no accelerator answers);
* ``torchlint run --device cpu``;
* ``torchlint run --device fake-cuda`` (the programs see one CUDA device and train on it).

Reported: the fake-cuda run's outcome (status, optimizer steps, forward calls, host syncs),
its findings, and the median wall time of each way with the ratio to plain ``python``. The
programs that use torchvision need a ``--python`` whose environment can import it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: name, script, arguments (small: one epoch of the stand-in data), what it needs.
PROGRAMS = [
    ("mnist", "main.py", ["--epochs", "1"], "mnist"),
    ("mnist_rnn", "main.py", ["--epochs", "1", "--accel"], "mnist"),
    ("vae", "main.py", ["--epochs", "1"], "mnist"),
    ("word_language_model", "main.py", ["--data", "./data/tiny", "--epochs", "1", "--accel", "--emsize", "32", "--nhid", "32",
                                        "--bptt", "10", "--log-interval", "5", "--use-optimizer", "--lr", "0.01"], "corpus"),
    ("regression", "main.py", [], None),
    ("mnist_forward_forward", "main.py", ["--epochs", "3", "--train_size", "300", "--test_size", "100"], "mnist-local"),
    ("time_sequence_prediction", "train.py", ["--steps", "3"], "sine"),
    ("siamese_network", "main.py", ["--epochs", "1"], "mnist"),
]


def fake_mnist(raw: Path, train: int = 320) -> None:
    """Random digits in torchvision's raw MNIST format (uncompressed IDX files)."""
    raw.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    for prefix, count in (("train", train), ("t10k", 128)):
        images = bytes(rng.randrange(256) for _ in range(count * 28 * 28))
        labels = bytes(rng.randrange(10) for _ in range(count))
        (raw / f"{prefix}-images-idx3-ubyte").write_bytes(struct.pack(">IIII", 2051, count, 28, 28) + images)
        (raw / f"{prefix}-labels-idx1-ubyte").write_bytes(struct.pack(">II", 2049, count) + labels)


def tiny_corpus(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    words = "the model learns a small language of tokens and the loss goes down while the data repeats".split()
    for name, lines in (("train", 400), ("valid", 60), ("test", 60)):
        text = "".join(" " + " ".join(rng.choice(words) for _ in range(rng.randint(5, 15))) + " \n" for _ in range(lines))
        (folder / f"{name}.txt").write_text(text)


def prepare(examples: Path, need: str | None, folder: Path, python: str, mnist_train: int) -> None:
    if need == "mnist":
        fake_mnist(examples / "data" / "MNIST" / "raw", mnist_train)  # the programs read '../data'
    elif need == "mnist-local":
        fake_mnist(folder / "data" / "MNIST" / "raw", mnist_train)  # './data/'
    elif need == "corpus":
        tiny_corpus(folder / "data" / "tiny")
    elif need == "sine" and not (folder / "traindata.pt").exists():
        subprocess.run([python, "generate_sine_wave.py"], cwd=folder, check=True, timeout=300)


def timed(command: list[str], cwd: Path, env: dict) -> tuple[float, subprocess.CompletedProcess]:
    started = time.monotonic()
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    return time.monotonic() - started, proc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=Path, required=True, help="a checkout of pytorch/examples")
    parser.add_argument("--python", default=sys.executable, help="the interpreter (its environment needs torchvision)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated program names")
    parser.add_argument("--mnist-train", type=int, default=320,
                        help="training images in the stand-in MNIST (6400: 100 steps an epoch, for the steady-state cost)")
    args = parser.parse_args()
    only = {name for name in args.only.split(",") if name}
    # One thread each, as the other runtime benchmarks: a busy 2-core machine flips timings otherwise.
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    rows = []
    for name, script, script_args, need in PROGRAMS:
        if only and name not in only:
            continue
        folder = args.examples / name
        prepare(args.examples, need, folder, args.python, args.mnist_train)
        ways = {
            "python": [args.python, script, *script_args],
            "cpu": [args.python, "-m", "torchlint", "run", script, "--device", "cpu", "-q", "--output-format", "json", "--",
                    *script_args],
            "fake-cuda": [args.python, "-m", "torchlint", "run", script, "--device", "fake-cuda", "-q", "--output-format", "json",
                          "--", *script_args],
        }
        times: dict[str, list[float]] = {way: [] for way in ways}
        report = None
        for _ in range(args.repeats):
            for way, command in ways.items():
                seconds, proc = timed(command, folder, env)
                times[way].append(seconds)
                if way == "fake-cuda":
                    try:
                        report = json.loads(proc.stdout)
                    except ValueError:
                        report = {"outcome": {"status": f"no report (exit {proc.returncode})", "summary": proc.stderr[-500:]}}
                elif way == "python" and proc.returncode != 0:
                    last = proc.stderr.strip().splitlines()[-1:] or [""]
                    print(f"{name}: plain python exited {proc.returncode}: {last[0][:200]}", file=sys.stderr)
        medians = {way: statistics.median(values) for way, values in times.items()}
        rows.append((name, medians, times, report))
        print(json.dumps({"program": name, "median_s": medians, "times_s": times, "outcome": (report or {}).get("outcome"),
                          "findings": [(f["filename"], f["location"]["row"], f["code"], f["status"])
                                       for f in (report or {}).get("findings", [])]}), flush=True)
    print("\n| program | fake-cuda outcome | steps / forwards | findings | python | run cpu | run fake-cuda |")
    print("|---|---|---|---|---|---|---|")
    for name, medians, _, report in rows:
        outcome = (report or {}).get("outcome", {})
        findings = ", ".join(f"{f['code']} {f['status']}" for f in (report or {}).get("findings", [])) or "none"
        base = medians["python"]
        print(f"| {name} | {outcome.get('status')} | {outcome.get('optimizer_steps')} / {outcome.get('forward_calls')} | {findings} "
              f"| {base:.1f} s | {medians['cpu']:.1f} s ({medians['cpu'] / base:.2f}x) "
              f"| {medians['fake-cuda']:.1f} s ({medians['fake-cuda'] / base:.2f}x) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
