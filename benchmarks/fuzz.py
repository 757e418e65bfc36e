"""Fuzz `torchlint check` and `--fix --unsafe-fixes` for a while and print figures.

    python benchmarks/fuzz.py --seconds 300 [--out fuzz-findings/]

The harness is tests/fuzzing.py (the suite runs it for a few dozen examples). Here it runs
in child processes, so a native crash (a signal) is counted and the run goes on with a new
seed; the input being checked is written to disk first, so such a crash leaves its culprit.
An input that takes longer than --hang-seconds counts as a hang.

Figures: inputs tried, inputs Python parses, files fixed, crashes (exception or TL001),
process deaths, hangs, fix failures (fixed file does not parse, or a second fix changes it
again), fixes refused by the runner because their result would not parse.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))


class Hang(Exception):
    pass


def _worker(seconds: float, seed: int, hang_seconds: float, current: Path) -> None:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st
    import hypothesmith

    from fuzzing import Figures, check_one, make_engine, mutate

    folder = Path(tempfile.mkdtemp(prefix="torchlint-fuzz-"))
    engine = make_engine(folder)
    figures = Figures()
    hangs: list[tuple[str, str]] = []
    deadline = time.monotonic() + seconds

    def on_alarm(signum, frame):
        raise Hang()

    signal.signal(signal.SIGALRM, on_alarm)

    def check(source, rnd):
        text = mutate(source, rnd)  # before any early return: hypothesis wants the same draws every time
        if time.monotonic() > deadline:
            return  # let this batch finish quickly
        current.write_text(text, encoding="utf-8", errors="surrogatepass")
        signal.setitimer(signal.ITIMER_REAL, hang_seconds)
        try:
            check_one(engine, folder, text, figures)
        except Hang:
            hangs.append((text, f"took more than {hang_seconds} s"))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    batch = 0
    while time.monotonic() < deadline:
        # Batches with seeds of their own: a hypothesis run cannot be stopped midway cleanly.
        run = hypothesis_seed(seed * 100_000 + batch)(
            settings(max_examples=50, deadline=None, database=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))(
                given(source=hypothesmith.from_grammar(), rnd=st.randoms(use_true_random=False))(check)
            )
        )
        run()
        batch += 1
    print(json.dumps({
        "tried": figures.tried, "parsed": figures.parsed, "fixed_files": figures.fixed_files,
        "crashes": figures.crashes, "fix_failures": figures.fix_failures, "rejected": figures.rejected,
        "hangs": hangs,
    }))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--chunk-seconds", type=float, default=60, help="run time of one child process")
    parser.add_argument("--hang-seconds", type=float, default=20)
    parser.add_argument("--out", type=Path, default=None, help="folder for the failing inputs")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--current", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args.seconds, args.seed, args.hang_seconds, args.current)
        return

    totals = {"tried": 0, "parsed": 0, "fixed_files": 0, "crashes": [], "fix_failures": [], "rejected": [], "hangs": []}
    deaths: list[tuple[str, str]] = []
    start = time.monotonic()
    seed = args.seed
    current = Path(tempfile.mkdtemp(prefix="torchlint-fuzz-current-")) / "current.py"
    while (left := args.seconds - (time.monotonic() - start)) > 1:
        chunk = min(args.chunk_seconds, left)
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", "--seconds", str(chunk), "--seed", str(seed),
             "--hang-seconds", str(args.hang_seconds), "--current", str(current)],
            capture_output=True, text=True, timeout=chunk + 10 * args.hang_seconds + 120,
        )
        seed += 1
        if proc.returncode != 0:
            culprit = current.read_text(encoding="utf-8", errors="replace") if current.exists() else ""
            deaths.append((culprit, f"exit {proc.returncode}: {proc.stderr[-500:]}"))
            continue
        figures = json.loads(proc.stdout.strip().splitlines()[-1])
        for key, value in figures.items():
            totals[key] += value
    elapsed = time.monotonic() - start
    print(f"fuzzed for {elapsed:.0f} s, torchlint check + --fix --unsafe-fixes, all rules enabled")
    print(f"  inputs tried:            {totals['tried']}")
    print(f"  inputs Python parses:    {totals['parsed']}")
    print(f"  files fixed:             {totals['fixed_files']}")
    print(f"  crashes (exception/TL001): {len(totals['crashes'])}")
    print(f"  process deaths (signal):  {len(deaths)}")
    print(f"  hangs (> {args.hang_seconds:g} s):          {len(totals['hangs'])}")
    print(f"  fix not idempotent / unparsable: {len(totals['fix_failures'])}")
    print(f"  fixes refused (result would not parse): {len(totals['rejected'])}")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        for kind in ("crashes", "fix_failures", "rejected", "hangs"):
            for index, (source, what) in enumerate(totals[kind]):
                (args.out / f"{kind}-{index}.py").write_text(f"# {what[:300]!r}\n{source}", encoding="utf-8", errors="surrogatepass")
        for index, (source, what) in enumerate(deaths):
            (args.out / f"death-{index}.py").write_text(f"# {what[:300]!r}\n{source}", encoding="utf-8", errors="replace")
    for kind in ("crashes", "fix_failures", "rejected", "hangs"):
        for source, what in totals[kind][:5]:
            print(f"\n--- {kind}: {what[:500]}")
    for source, what in deaths[:5]:
        print(f"\n--- process death: {what[:500]}")


if __name__ == "__main__":
    main()
