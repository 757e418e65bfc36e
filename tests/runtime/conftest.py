from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "runtime"


def every_rule() -> dict:
    """The registry a run knows: the engines' codes and every installed plugin's rules."""
    from torchlint.pluginmanager import make_plugin_manager, rule_registry

    return rule_registry(make_plugin_manager())


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped without one)")


@dataclass
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def report(self) -> dict:
        try:
            return json.loads(self.stdout)
        except ValueError:
            raise AssertionError(f"not a JSON report (exit {self.returncode}):\n{self.stdout}\n--- stderr ---\n{self.stderr[-3000:]}") from None

    def findings(self, status: str | None = None) -> list[dict]:
        return [f for f in self.report["findings"] if status is None or f["status"] == status]

    def codes(self, status: str) -> set[str]:
        return {f["code"] for f in self.findings(status)}


def torchlint_run(*args: str, cwd: Path, timeout: float = 120, env: dict | None = None) -> RunResult:
    """`torchlint run ARGS` in a subprocess, as a user would type it (``env``: extra variables)."""
    import os
    import time

    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "torchlint", "run", *args],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, env=dict(os.environ, **(env or {})),
    )
    return RunResult(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started)


@pytest.fixture(scope="session")
def inductor_cache(request) -> dict:
    """The environment of a run that compiles with Inductor: one TORCHINDUCTOR_CACHE_DIR kept
    across test runs (Inductor's cold start is ~16 s on 2 cores, ~3.5 s warm). Skips without
    a C++ compiler, which Inductor needs on the CPU."""
    import shutil
    import tempfile

    if shutil.which("g++") is None and shutil.which("c++") is None:
        pytest.skip("Inductor needs a C++ compiler on the CPU")
    cache_provider = getattr(request.config, "cache", None)
    if cache_provider is not None:
        cache = cache_provider.mkdir("torchlint-inductor")
    else:
        cache = Path(tempfile.gettempdir()) / "torchlint-inductor-cache"
        cache.mkdir(exist_ok=True)
    return {"TORCHINDUCTOR_CACHE_DIR": str(cache)}


@pytest.fixture
def write(tmp_path):
    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
        return path

    return write
