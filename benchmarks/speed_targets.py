#!/usr/bin/env python3
"""torchlint's own speed targets on one tree, measured in one run (standard library only).

  cold-1     torchlint check --no-cache --jobs 1     CPU time vs the libcst parse floor (target <= 1.5x)
  cold-N     torchlint check --no-cache (all cores)  wall time
  warm       torchlint check, cache filled, nothing changed   (target <= 0.5 s wall)
  commit-5   torchlint check on 5 files, as pre-commit runs it, interpreter start included (target <= 0.4 s),
             next to the libcst floor for the same files (interpreter + libcst import + parse): the
             files alone (--no-project-context, no cache), and with the rest of the project read
             from a warm cache (the default, so that each file gets the full check's findings)
  peak RSS   of the largest process in cold-1                 (target <= 300 MB)

Usage:
  python3 benchmarks/speed_targets.py /work/corpora/timm --torchlint .venv/bin/torchlint --repeat 3

The runs go round-robin (floor, cold, ..., then again), and the cold/floor ratio is the
median of each round's own ratio, so both sides of a ratio ran under the same conditions.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_torchfix import LIBCST_FLOOR, measure, script_interpreter  # noqa: E402


def python_files(root: str) -> list[str]:
    found = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in (".git", "__pycache__"))
        found.extend(os.path.join(directory, name) for name in sorted(filenames) if name.endswith(".py"))
    return found


def read_text(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def run_round_robin(commands: dict[str, list[str]], workdir: str, repeat: int, timeout: float) -> dict[str, list[dict]]:
    """Every command once per round, `repeat` rounds. A run and its floor then see the same
    machine: on a shared host the CPU speed drifts by 20 % over minutes, more than the
    margins being measured."""
    runs: dict[str, list[dict]] = {label: [] for label in commands}
    for _ in range(repeat):
        for label, cmd in commands.items():
            run = measure(cmd, workdir, timeout)
            if "error" in run:
                raise SystemExit(f"failed: {' '.join(cmd)}: {run['error']}")
            runs[label].append(run)
    return runs


def cpu(run: dict) -> float:
    return run["user_s"] + run["sys_s"]


def summary(runs: list[dict]) -> dict:
    return {
        "wall_s": statistics.median(r["wall_s"] for r in runs),
        "cpu_s": statistics.median(cpu(r) for r in runs),
        "rss_mb": max(r["maxrss_kib"] for r in runs) / 1024,
    }


def paired_ratio(runs: list[dict], floors: list[dict], metric) -> tuple[float, float, float]:
    """Median, lowest and highest of the per-round ratios run / floor."""
    ratios = sorted(metric(run) / metric(floor) for run, floor in zip(runs, floors))
    return statistics.median(ratios), ratios[0], ratios[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus")
    parser.add_argument("--torchlint", default=shutil.which("torchlint") or "torchlint")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    corpus = os.path.abspath(args.corpus)
    python = script_interpreter(args.torchlint) or sys.executable
    files = python_files(corpus)
    with tempfile.TemporaryDirectory(prefix="torchlint-speed-") as workdir:
        # The cache lives in the project root: give the copy its own pyproject so runs don't share one.
        tree = os.path.join(workdir, "tree")
        shutil.copytree(corpus, tree, ignore=shutil.ignore_patterns("__pycache__", ".git"))
        with open(os.path.join(tree, "pyproject.toml"), "w") as handle:
            handle.write("[tool.torchlint]\n")
        base = [args.torchlint, "check", "--exit-zero", "-q"]
        torch_files = [f for f in python_files(tree) if "torch" in read_text(f)]
        five = sorted(torch_files, key=os.path.getsize)[len(torch_files) // 2 :][:5]  # typical, not the smallest
        # What any libcst-based tool pays for the same five files: interpreter, libcst's import, parsing.
        five_tree = os.path.join(workdir, "five")
        os.makedirs(five_tree)
        for index, path in enumerate(five):
            shutil.copy(path, os.path.join(five_tree, f"{index}_{os.path.basename(path)}"))
        skip = json.dumps([".git", "__pycache__"])
        cold = run_round_robin(
            {
                "floor": [python, "-c", LIBCST_FLOOR, tree, skip],
                "cold_1": [*base, "--no-cache", "--jobs", "1", tree],
                "cold_n": [*base, "--no-cache", tree],
                "commit_floor": [python, "-c", LIBCST_FLOOR, five_tree, "[]"],
                "commit": [*base, "--no-cache", "--no-project-context", "--force-exclude", *five],
            },
            workdir,
            args.repeat,
            args.timeout,
        )
        measure([*base, tree], workdir, args.timeout)  # fill the cache
        warm_runs = run_round_robin(
            {"warm": [*base, tree], "commit_project": [*base, "--force-exclude", *five]}, workdir, args.repeat, args.timeout
        )
        warm, commit_project = warm_runs["warm"], summary(warm_runs["commit_project"])
    floor, cold_1, cold_n = summary(cold["floor"]), summary(cold["cold_1"]), summary(cold["cold_n"])
    commit, commit_floor = summary(cold["commit"]), summary(cold["commit_floor"])
    ratio, low, high = paired_ratio(cold["cold_1"], cold["floor"], cpu)
    commit_ratio = paired_ratio(cold["commit"], cold["commit_floor"], lambda r: r["wall_s"])[0]
    rows = [
        ("libcst parse floor", floor, ""),
        ("cold, --jobs 1", cold_1, f"CPU {ratio:.2f}x floor, rounds {low:.2f}-{high:.2f}x (target <= 1.5x)"),
        ("cold, all cores", cold_n, f"wall {cold_n['wall_s'] / floor['wall_s']:.2f}x floor wall"),
        ("warm (cache, no change)", summary(warm), f"target <= 0.5 s wall: {'met' if summary(warm)['wall_s'] <= 0.5 else 'MISSED'}"),
        ("pre-commit, 5 files", commit, f"target <= 0.4 s wall: {'met' if commit['wall_s'] <= 0.4 else 'MISSED'}; {commit_ratio:.2f}x its floor"),
        ("  libcst floor, same 5", commit_floor, "interpreter + import libcst + parse, one process"),
        ("  with project, warm", commit_project, "the default: the rest of the project from the cache"),
    ]
    print(f"{len(files)} files in {corpus}; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
    print(f"{'run':<26}{'wall s':>9}{'CPU s':>9}{'RSS MB':>9}  note")
    for label, row, note in rows:
        print(f"{label:<26}{row['wall_s']:>9.2f}{row['cpu_s']:>9.2f}{row['rss_mb']:>9.0f}  {note}")
    print(f"peak RSS of cold --jobs 1: {cold_1['rss_mb']:.0f} MB (target <= 300 MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
