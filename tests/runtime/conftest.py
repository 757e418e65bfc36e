from __future__ import annotations

import importlib.util
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
    """`torchlint run ARGS` as a user would type it (``env``: extra variables), forked by this
    worker's warm server where it starts the same (``runtime.parent.warm_server``; set
    TORCHLINT_TEST_COLD=1 to start every run as a fresh `python -m torchlint` instead)."""
    import os
    import time

    started = time.monotonic()
    environment = dict(os.environ, **(env or {}))
    server = None if environment.get("TORCHLINT_TEST_COLD") else _warm_server()
    if server is not None and server.serves(environment):
        returncode, stdout, stderr = server.run(["run", *args], cwd=cwd, env=environment, timeout=timeout)
        return RunResult(returncode, stdout, stderr, time.monotonic() - started)
    proc = subprocess.run(
        [sys.executable, "-m", "torchlint", "run", *args],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, env=environment,
    )
    return RunResult(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started)


_WARM: list = []  # this worker's WarmServer, started by the first run that wants one


def _warm_server():
    if importlib.util.find_spec("torch") is None:
        return None
    if not _WARM:
        from torchlint.runtime.parent.warm_server import WarmServer

        # A worker's runs include dozens that compile with Inductor (the compile tests).
        _WARM.append(WarmServer(compiles=True))
    return _WARM[0]


def pytest_unconfigure(config):
    for server in _WARM:
        server.close()


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
