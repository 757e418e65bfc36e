"""kill -9 during `torchlint check --fix`: every file must be its original bytes or its fully
fixed bytes afterwards, never a mix or a truncation, and a temp file a killed write leaves
behind is hidden, never checked, and removed by the next run that writes that file.

Shared by tests/test_kill_during_fix.py (a few kills) and benchmarks/reliability.py.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

#: Each file gets a few safe fixes (TL401, TL402, TL301 into load_state_dict) and a tail of
#: its own, so no two files are alike and a file fixed by another's text would show.
TEMPLATE = (
    "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n\n\n"
    "def step_{n}(model, path, x):\n"
    "    model.load_state_dict(torch.load(path, weights_only=True))\n"
    "    a = torch.log(1 + x)\n"
    "    b = torch.exp(x) - 1\n"
    "    return a + b + {n}\n"
)


@dataclass
class KillFigures:
    kills: int = 0
    mid_write: int = 0  # kills that left some files fixed and some not
    leftovers_seen: int = 0  # temp files found right after a kill
    problems: list[str] = field(default_factory=list)


def make_tree(root: Path, count: int) -> dict[Path, bytes]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text('[project]\nname = "killed"\n')
    originals = {}
    for n in range(count):
        path = root / f"pkg{n % 7}" / f"m{n:04d}.py"
        path.parent.mkdir(exist_ok=True)
        data = (TEMPLATE.format(n=n) + "# padding\n" * (n % 13)).encode()
        path.write_bytes(data)
        originals[path] = data
    return originals


def _command(root: Path) -> list[str]:
    return [sys.executable, "-m", "torchlint", "check", "--no-cache", "--fix", "-j", "1", "-q", "--exit-zero", str(root)]


def fixed_bytes(root: Path, originals: dict[Path, bytes]) -> tuple[dict[Path, bytes], float]:
    """Each file's fully fixed bytes, and how long one whole run takes."""
    started = time.monotonic()
    subprocess.run(_command(root), check=True, capture_output=True, timeout=300)
    took = time.monotonic() - started
    fixed = {path: path.read_bytes() for path in originals}
    changed = sum(fixed[p] != originals[p] for p in originals)
    if changed != len(originals):
        raise AssertionError(f"only {changed} of {len(originals)} files were fixable")
    return fixed, took


def _restore(originals: dict[Path, bytes]) -> None:
    for path, data in originals.items():
        path.write_bytes(data)


def _strays(root: Path, originals: dict[Path, bytes]) -> list[Path]:
    known = set(originals) | {root / "pyproject.toml"}
    return [p for p in root.rglob("*") if p.is_file() and p not in known]


def kill_runs(root: Path, originals: dict[Path, bytes], fixed: dict[Path, bytes], took: float, kills: int,
              rnd: random.Random, figures: KillFigures) -> None:
    for _ in range(kills):
        _restore(originals)
        process = subprocess.Popen(_command(root), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rnd.uniform(0.0, took))
        os.kill(process.pid, signal.SIGKILL)  # our own child, by its id
        process.wait(timeout=30)
        figures.kills += 1
        states = {"original": 0, "fixed": 0}
        for path, data in originals.items():
            now = path.read_bytes()
            if now == data:
                states["original"] += 1
            elif now == fixed[path]:
                states["fixed"] += 1
            else:
                figures.problems.append(f"{path.name}: neither original nor fixed after a kill ({len(now)} bytes)")
        figures.mid_write += states["original"] > 0 and states["fixed"] > 0
        strays = _strays(root, originals)
        figures.leftovers_seen += len(strays)
        for stray in strays:
            if not stray.name.startswith(".") or stray.suffix == ".py":
                figures.problems.append(f"a kill left {stray.name}, which is not a hidden temp file")
    # A whole run afterwards fixes everything and clears what killed runs left.
    subprocess.run(_command(root), check=True, capture_output=True, timeout=300)
    wrong = [p.name for p in originals if p.read_bytes() != fixed[p]]
    if wrong:
        figures.problems.append(f"after a whole run {len(wrong)} files are not fixed: {wrong[:3]}")
    strays = _strays(root, originals)
    if strays:
        figures.problems.append(f"a whole run left {len(strays)} temp files behind: {[p.name for p in strays[:3]]}")


def fresh_tree(base: Path, count: int) -> tuple[Path, dict[Path, bytes]]:
    root = base / "tree"
    shutil.rmtree(root, ignore_errors=True)
    return root, make_tree(root, count)
