"""Score `torchlint run` on the silent-training-error programs in `benchmarks/silent_errors/`.

Each folder holds a program that trains silently wrong (`buggy.py`, whose first line says
which runtime code must catch it: `# expect: TL745`) and its fixed twin (`fixed.py`), which
must get no runtime-only finding at all. A program whose second line is `# ranks: 2` runs as
two ranks (`--nproc-per-node 2`, gloo). Prints one line per program and the totals: caught,
missed, false positives on the twins.

    python benchmarks/silent_errors.py                     # every program, --device cpu
    python benchmarks/silent_errors.py --device fake-cuda  # the same under simulated CUDA
    python benchmarks/silent_errors.py dying_relu          # some of them
    python benchmarks/silent_errors.py --device cuda -j 8  # on a real GPU (below), 8 at a time

With `--device cuda` each single-process program runs on the GPU as written except for one
line: a copy of it makes CUDA torch's default device (`torch.set_default_device("cuda")`,
put after its header comments, so the lines it reports move down by one) and its autocast
regions name "cuda". Two programs stay out there: those on two ranks (one GPU per rank) and
those whose batches DataLoader workers build (a forked worker cannot make CUDA tensors).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent / "silent_errors"
RANKS = re.compile(r"^#\s*ranks:\s*(\d+)", re.M)
EXPECT = re.compile(r"#\s*expect:\s*((?:TL\d{3}[ ,]*)+)")


def runtime_codes(script: Path, device: str, timeout: float) -> tuple[set[str], str]:
    """The runtime-only codes `torchlint run` reports on `script`, and the run's status."""
    command = [sys.executable, "-m", "torchlint", "run", script.name, "--device", device, "-q",
               "--output-format", "json", "--timeout", str(int(timeout)), *ranks(script)]
    try:
        proc = subprocess.run(command, cwd=script.parent, capture_output=True, text=True, timeout=timeout + 60)
    except subprocess.TimeoutExpired:
        return set(), "hung"
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        return set(), f"no report (exit {proc.returncode})"
    codes = {f["code"] for f in report["findings"] if f["status"] == "runtime only"}
    return codes, report.get("outcome", {}).get("status", "?")


def on_the_gpu(script: Path, folder: Path) -> Path:
    """A copy of `script` in `folder` with CUDA as torch's default device (see the docstring)."""
    lines = script.read_text(encoding="utf-8").splitlines(keepends=True)
    header = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    lines.insert(header, 'import torch; torch.set_default_device("cuda")  # added: run on the GPU\n')
    text = "".join(lines).replace('autocast("cpu"', 'autocast("cuda"')
    copy = folder / script.name
    copy.write_text(text, encoding="utf-8")
    return copy


def gpu_exclusion(folder: Path) -> str | None:
    """Why the program in `folder` is left out on the GPU, or None."""
    text = (folder / "buggy.py").read_text(encoding="utf-8")
    if ranks(folder / "buggy.py"):
        return "two ranks need two GPUs"
    if "num_workers=" in text:
        return "its batches come from DataLoader workers, which cannot make CUDA tensors"
    return None


def ranks(script: Path) -> list[str]:
    match = RANKS.search("\n".join(script.read_text(encoding="utf-8").splitlines()[:3]))
    return ["--nproc-per-node", match.group(1)] if match else []


def expected(script: Path) -> set[str]:
    match = EXPECT.search(script.read_text(encoding="utf-8").splitlines()[0])
    return set(re.findall(r"TL\d{3}", match.group(1))) if match else set()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="program folders to run (default: all)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("-j", "--jobs", type=int, default=1, help="programs run at a time")
    options = parser.parse_args()
    folders = sorted(p for p in HERE.iterdir() if (p / "buggy.py").exists())
    if options.names:
        folders = [f for f in folders if f.name in options.names]
    if options.device == "cuda":
        for folder in list(folders):
            if why := gpu_exclusion(folder):
                print(f"{folder.name:36} left out on the GPU: {why}")
                folders.remove(folder)
    caught = missed = false_positives = 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch, ThreadPoolExecutor(options.jobs) as pool:
        def score(folder: Path):
            scripts = [folder / "buggy.py", folder / "fixed.py"]
            if options.device == "cuda":
                copies = Path(scratch) / folder.name
                copies.mkdir()
                scripts = [on_the_gpu(script, copies) for script in scripts]
            return [runtime_codes(script, options.device, options.timeout) for script in scripts]

        for folder, ((got, status), (twin, twin_status)) in zip(folders, pool.map(score, folders)):
            want = expected(folder / "buggy.py")
            hit = bool(want & got)
            caught += hit
            missed += not hit
            false_positives += bool(twin)
            print(f"{folder.name:36} {'caught' if hit else 'MISSED':7} want {','.join(sorted(want)):7} "
                  f"got {','.join(sorted(got)) or '-':28} twin {','.join(sorted(twin)) or 'clean':18} ({status}/{twin_status})",
                  flush=True)
    total = len(folders)
    print(f"\n{caught}/{total} caught, {missed} missed, {false_positives}/{total} fixed twins with a finding "
          f"(--device {options.device}, {time.monotonic() - started:.0f} s)")
    return 0 if missed == 0 and false_positives == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
