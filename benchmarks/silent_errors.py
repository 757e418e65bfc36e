"""Score `torchlint run` on the silent-training-error programs in `benchmarks/silent_errors/`.

Each folder holds a program that trains silently wrong (`buggy.py`, whose first line says
which runtime code must catch it: `# expect: TL745`) and its fixed twin (`fixed.py`), which
must get no runtime-only finding at all. A program whose second line is `# ranks: 2` runs as
two ranks (`--nproc-per-node 2`, gloo). Prints one line per program and the totals: caught,
missed, false positives on the twins.

    python benchmarks/silent_errors.py                     # every program, --device cpu
    python benchmarks/silent_errors.py --device fake-cuda  # the same under simulated CUDA
    python benchmarks/silent_errors.py dying_relu          # some of them
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
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
    options = parser.parse_args()
    folders = sorted(p for p in HERE.iterdir() if (p / "buggy.py").exists())
    if options.names:
        folders = [f for f in folders if f.name in options.names]
    caught = missed = false_positives = 0
    started = time.monotonic()
    for folder in folders:
        want = expected(folder / "buggy.py")
        got, status = runtime_codes(folder / "buggy.py", options.device, options.timeout)
        twin, twin_status = runtime_codes(folder / "fixed.py", options.device, options.timeout)
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
