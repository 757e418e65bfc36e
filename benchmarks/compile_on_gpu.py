"""`torchlint run --compile` on the compile examples, on the CPU and on a real GPU side by side.

On the GPU each program runs with CUDA as torch's default device (the one line that
`silent_errors.py --device cuda` adds), so Inductor writes Triton kernels instead of C++.
Prints, per example, the outcome and the findings' codes on each device. The examples whose
bug is injected into Inductor's C++ code generation (`accuracy_drift`, `compile_error`) are
left out: on the GPU that code does not run.

    python benchmarks/compile_on_gpu.py -j 6
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from silent_errors import on_the_gpu  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "compile"
CPU_ONLY_BUGS = {"accuracy_drift", "compile_error"}


def run(script: Path, device: str, timeout: float) -> str:
    command = [sys.executable, "-m", "torchlint", "run", script.name, "--device", device, "--compile", "-q",
               "--output-format", "json", "--timeout", str(int(timeout))]
    try:
        proc = subprocess.run(command, cwd=script.parent, capture_output=True, text=True, timeout=timeout + 60)
    except subprocess.TimeoutExpired:
        return "hung"
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        return f"no report (exit {proc.returncode}): {proc.stderr[-300:]}"
    codes = sorted(f"{f['code']}:{f['status']}@{f['location']['row']}" for f in report["findings"])
    return f"{report['outcome']['status']} {' '.join(codes) or '-'}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-j", "--jobs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=240)
    options = parser.parse_args()
    examples = sorted(p.parent for p in EXAMPLES.glob("*/train.py") if p.parent.name not in CPU_ONLY_BUGS)
    with tempfile.TemporaryDirectory() as scratch, ThreadPoolExecutor(options.jobs) as pool:
        def both(example: Path) -> tuple[str, str]:
            copy = Path(scratch) / example.name
            copy.mkdir()
            for sibling in example.glob("*.py"):
                (copy / sibling.name).write_text(sibling.read_text(encoding="utf-8"), encoding="utf-8")
            gpu_script = on_the_gpu(example / "train.py", copy)  # overwrites the plain copy
            return run(example / "train.py", "cpu", options.timeout), run(gpu_script, "cuda", options.timeout)

        for example, (cpu, cuda) in zip(examples, pool.map(both, examples)):
            print(f"{example.name:16} cpu:  {cpu}\n{'':16} cuda: {cuda}  (rows +1: the added line)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
