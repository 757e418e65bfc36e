"""The reliability campaign at full size; the suite runs each part bounded.

    python benchmarks/reliability.py fuzz --files 300 [--seed 1]
    python benchmarks/reliability.py differential --timm /tmp/timm/src [--torch-files 100]
    python benchmarks/reliability.py kill --files 300 --kills 100
    python benchmarks/reliability.py lsp --rounds 5
    python benchmarks/reliability.py scaling

fuzz          torch's installed sources, seeded with finding-rich snippets, under every
              mutation of tests/torch_fuzz.py (page break, separators, CRLF, lone CR, BOM,
              tabs, deep nesting) plus a `# noqa` as --add-noqa writes it
differential  --fix and --fix --unsafe-fixes over timm's sources (`pip download --no-deps
              timm -d /tmp/timm && unzip /tmp/timm/timm-*.whl -d /tmp/timm/src`) and seeded
              torch files; `ast` compared pass by pass (tests/fix_differential.py)
kill          SIGKILL `torchlint check --fix` at random moments (tests/kill_fix.py)
lsp           the hostile-message session against `torchlint server` (tests/lsp_hostile.py)
scaling       cost that grows with the file: 1,000 and 10,000 one-line statements (10,000 in at
              most 10x the time of 1,000), 1,000 and 3,000 `torch.load` lines, `--fix` of 3,000
              of them (at most 30 s), and the peak memory of a 100,000-line file (at most 500 MB)

Each prints its figures and every problem found, and exits 1 if there was one.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))


def fuzz(args) -> list[str]:
    from fuzzing import make_engine
    from torch_fuzz import FuzzFigures, fuzz_file, torch_sources

    rnd = random.Random(args.seed)
    files = torch_sources(args.max_bytes)
    sample = rnd.sample(files, min(args.files, len(files)))
    figures = FuzzFigures()
    with tempfile.TemporaryDirectory() as folder:
        engine = make_engine(Path(folder))
        for source in sample:
            fuzz_file(engine, Path(folder), source, rnd, figures)
    print(f"fuzz: {figures.files} torch files, {figures.mutants} mutants checked, {figures.findings} findings compared, "
          f"{len(figures.problems)} problems")
    return figures.problems


def differential(args) -> list[str]:
    from fix_differential import DiffFigures, differential as compare
    from fuzzing import make_engine
    from torch_fuzz import seed_findings, torch_sources

    rnd = random.Random(args.seed)
    corpus: list[tuple[str, str]] = []
    if args.timm:
        timm = sorted(Path(args.timm).rglob("*.py"))
        corpus += [(str(p), p.read_text(encoding="utf-8")) for p in timm]
        corpus += [(f"{p} (seeded)", seed_findings(p.read_text(encoding="utf-8"), rnd, count=6))
                   for p in rnd.sample(timm, min(args.seeded_timm, len(timm)))]
    from torch_fuzz import MUTATIONS

    files = torch_sources(args.max_bytes)
    for p in rnd.sample(files, min(args.torch_files, len(files))):
        seeded = seed_findings(p.read_text(encoding="utf-8"), rnd, count=6)
        corpus.append((f"{p} (seeded)", seeded))
        for mutation in args.mutations:  # the same code under other line endings and separators
            corpus.append((f"{p} (seeded, {mutation})", MUTATIONS[mutation](seeded, rnd)[0]))
    figures = DiffFigures()
    problems = []
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)
        engine = make_engine(Path(folder))
        for name, text in corpus:
            before = len(figures.problems)
            try:
                compare(engine, "case.py", text, figures)
            except (SyntaxError, ValueError, RecursionError):
                continue
            problems += [f"{name}: {p}" for p in figures.problems[before:]]
    print(f"differential: {figures.files} files, {figures.fixed_files} fixed runs, {figures.fixes} fixes compared, "
          f"{len(problems)} problems")
    return problems


def kill(args) -> list[str]:
    from kill_fix import KillFigures, fixed_bytes, fresh_tree, kill_runs

    figures = KillFigures()
    with tempfile.TemporaryDirectory() as folder:
        root, originals = fresh_tree(Path(folder), args.files)
        fixed, took = fixed_bytes(root, originals)
        root, originals = fresh_tree(Path(folder), args.files)
        kill_runs(root, originals, fixed, took, args.kills, random.Random(args.seed), figures)
    print(f"kill: {args.files} files, one run {took:.1f} s, {figures.kills} kills, {figures.mid_write} mid-write "
          f"(some files fixed, some not), {figures.leftovers_seen} temp files seen right after a kill, "
          f"{len(figures.problems)} problems")
    return figures.problems


def lsp(args) -> list[str]:
    from lsp_hostile import hostile_session

    problems, sent = [], 0
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "pyproject.toml").write_text('[project]\nname = "w"\n')
            found, count = hostile_session(Path(folder))
            problems += found
            sent += count
    print(f"lsp: {args.rounds} sessions, {sent} hostile messages, {len(problems)} problems")
    return problems


def _timed_check(folder: Path, name: str, lines: list[str], *extra: str) -> tuple[float, int]:
    """Seconds and peak kilobytes of one `torchlint check` of a file made of `lines`, alone in
    its own project, in one process (-j 1), from a cold start."""
    import subprocess

    project = folder / name.replace(".", "_")
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "scaling"\n')
    (project / name).write_text("\n".join(lines) + "\n")
    command = [sys.executable, "-c", "import resource, subprocess, sys; subprocess.run(sys.argv[1:]); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
               sys.executable, "-m", "torchlint", "check", "--isolated", "--no-cache", "-j", "1", "-q", "--exit-zero", *extra, name]
    started = time.monotonic()
    done = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=1800)
    seconds = time.monotonic() - started
    return seconds, int(done.stdout.strip().splitlines()[-1])


def scaling(args) -> list[str]:
    problems = []
    statements = lambda n: ["import torch", "x = torch.zeros(3)"] + [f"y{i} = x + {i}" for i in range(n)]
    loads = lambda n: ["import torch", 'p = "m.pt"'] + [f"m{i} = torch.load(p)" for i in range(n)]
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        small, _ = _timed_check(base, "s1000.py", statements(1000))
        large, _ = _timed_check(base, "s10000.py", statements(10_000))
        print(f"scaling: 1,000 statements {small:.2f} s, 10,000 {large:.2f} s: {large / small:.1f}x (target <= 10x)")
        if large > 10 * small:
            problems.append(f"10,000 statements took {large / small:.1f}x the time of 1,000")
        few, _ = _timed_check(base, "l1000.py", loads(1000))
        many, _ = _timed_check(base, "l3000.py", loads(3000))
        print(f"scaling: 1,000 torch.load lines {few:.2f} s, 3,000 {many:.2f} s: {many / few:.1f}x")
        fixed, _ = _timed_check(base, "f3000.py", loads(3000), "--fix", "--unsafe-fixes")
        print(f"scaling: --fix of 3,000 torch.load lines {fixed:.2f} s (target <= 30 s)")
        if fixed > 30:
            problems.append(f"--fix of 3,000 loads took {fixed:.0f} s")
        seconds, peak_kb = _timed_check(base, "big.py", statements(100_000))
        print(f"scaling: a 100,000-line file {seconds:.2f} s, peak {peak_kb / 1024:.0f} MB (target <= 500 MB)")
        if peak_kb > 500 * 1024:
            problems.append(f"a 100,000-line file peaked at {peak_kb / 1024:.0f} MB")
    return problems


def main() -> int:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--seed", type=int, default=1)
    common.add_argument("--max-bytes", type=int, default=60_000, help="skip torch files larger than this")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="part", required=True)
    p = sub.add_parser("fuzz", parents=[common])
    p.add_argument("--files", type=int, default=300)
    p = sub.add_parser("differential", parents=[common])
    p.add_argument("--timm", help="a folder of timm's sources")
    p.add_argument("--seeded-timm", type=int, default=0, help="also this many timm files seeded with fixable snippets")
    p.add_argument("--torch-files", type=int, default=100)
    p.add_argument("--mutations", nargs="*", default=["form-feed line", "crlf", "lone cr", "tabs"],
                   help="tests/torch_fuzz.py mutations each seeded torch file is also fixed under")
    p = sub.add_parser("kill", parents=[common])
    p.add_argument("--files", type=int, default=300)
    p.add_argument("--kills", type=int, default=100)
    p = sub.add_parser("lsp", parents=[common])
    p.add_argument("--rounds", type=int, default=5)
    sub.add_parser("scaling", parents=[common])
    args = parser.parse_args()
    started = time.monotonic()
    problems = {"fuzz": fuzz, "differential": differential, "kill": kill, "lsp": lsp, "scaling": scaling}[args.part](args)
    for problem in problems:
        print("  " + problem[:500])
    print(f"({time.monotonic() - started:.0f} s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
