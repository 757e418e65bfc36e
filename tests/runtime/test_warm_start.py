"""A run forked by the warm server is the run a user starts: same report, statuses and process
tree, only without a fresh interpreter (``runtime.parent.warm_start``, ``warm_server``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

from conftest import torchlint_run  # noqa: E402
from process_state import alive  # noqa: E402  (tests/process_state.py)

from torchlint.runtime.parent.warm_server import WarmServer  # noqa: E402

# Says which interpreter ran it (a fork keeps the server's command line), and has one finding
# the static half and the probes share: probabilities into CrossEntropyLoss.
PROGRAM = """
import sys
import torch
import torch.nn.functional as F

print("cmdline", open("/proc/self/cmdline").read().replace("\\0", " "))
logits = torch.randn(8, 4, requires_grad=True)
loss = torch.nn.CrossEntropyLoss()(torch.softmax(logits, dim=1), torch.randint(0, 4, (8,)))
loss.backward()
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""

ARGS = ("--device", "cpu", "--output-format", "json")


@pytest.fixture(scope="module")
def server():
    warm = WarmServer()
    if not warm.ready:
        pytest.fail("the warm server did not start")
    yield warm
    warm.close()


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("warm")
    (folder / "train.py").write_text(textwrap.dedent(PROGRAM).lstrip())
    return folder


def _warm(server, folder: Path, *args: str, timeout: float = 120) -> tuple[int, dict, str]:
    returncode, stdout, stderr = server.run(["run", "train.py", *ARGS, *args], cwd=folder, env=dict(os.environ),
                                            timeout=timeout)
    return returncode, json.loads(stdout), stderr


def _cold(folder: Path, *args: str) -> tuple[int, dict, str]:
    run = torchlint_run("train.py", *ARGS, *args, cwd=folder, env={"TORCHLINT_TEST_COLD": "1"})
    return run.returncode, run.report, run.stderr


def _comparable(report: dict) -> list[tuple]:
    return sorted((f["code"], f["status"], f["location"]["row"], f["message"]) for f in report["findings"])


@pytest.mark.parametrize("exit_status", ["0", "3"])
def test_a_forked_run_reports_what_a_fresh_one_does(server, program, exit_status):
    warm_code, warm, warm_err = _warm(server, program, "--", exit_status)
    cold_code, cold, cold_err = _cold(program, "--", exit_status)
    assert "warm_server" in warm_err and "warm_server" not in cold_err  # it was forked, and not
    assert "torchlint.runtime.child.main" in cold_err
    assert warm_code == cold_code
    assert warm["outcome"]["status"] == cold["outcome"]["status"]
    assert _comparable(warm) == _comparable(cold)
    assert any(code == "TL101" for code, *_ in _comparable(warm))


def test_a_run_past_the_callers_timeout_is_killed_and_the_server_serves_on(server, program, tmp_path):
    (tmp_path / "train.py").write_text(
        "import os, pathlib, time\npathlib.Path('pid').write_text(str(os.getpid()))\ntime.sleep(600)\n")
    # A forked run starts its target within a second; a caller's timeout that ends the run
    # before that shows nothing of the target, so a longer one is tried (not a fixed 20 s that
    # the worker would spend asleep on every run of the suite).
    for timeout in (2, 10, 30):
        with pytest.raises(subprocess.TimeoutExpired):
            server.run(["run", "train.py", "--device", "cpu"], cwd=tmp_path, env=dict(os.environ), timeout=timeout)
        if (tmp_path / "pid").exists():
            break
    target = int((tmp_path / "pid").read_text())
    # `torchlint run` was killed; its supervisor, told by the kernel, ends the target.
    deadline = time.monotonic() + 20
    while alive(target) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(target)
    returncode, report, _ = _warm(server, program)
    assert returncode != 0 and report["outcome"]["status"] == "completed"



def test_a_server_started_from_a_thread_serves_after_the_thread_ends(program):
    """A test's first run may come from a thread pool (test_invariants.py): the server lives as
    long as the process that started it, not the thread."""
    started: list[WarmServer] = []
    thread = threading.Thread(target=lambda: started.append(WarmServer()))
    thread.start()
    thread.join(timeout=150)
    [warm] = started
    try:
        time.sleep(0.5)  # a signal sent at the thread's end has arrived by now
        assert warm.serves(dict(os.environ)), "the server ended with the thread that started it"
        returncode, report, _ = _warm(warm, program)
        assert returncode != 0 and report["outcome"]["status"] == "completed"
    finally:
        warm.close()


def test_the_workers_server_has_done_what_runs_do_first(tmp_path):
    """The suite's own server (tests/runtime/conftest.py, ``compiles=True``) has executed libcst
    (every run's parent parses its target), resolved the files of what it imported (the child's
    verdict on each), imported Inductor and run its vector-ISA probes: a run it forks finds it
    all done (a fresh start prints False False False 0)."""
    (tmp_path / "train.py").write_text(
        "import sys\nfrom torchlint import lazy\nfrom torchlint.runtime import frames\n"
        "found = [lazy.is_loaded('libcst'), len(frames._REAL_PATHS) > 1000, 'torch._inductor.compile_fx' in sys.modules]\n"
        "from torch._inductor.cpu_vec_isa import valid_vec_isa_list  # imports Dynamo, which imports libcst\n"
        "print('prepared', *found, valid_vec_isa_list.cache_info().currsize)\n")
    run = torchlint_run("train.py", "--output-format", "json", cwd=tmp_path)
    assert "prepared True True True 1" in run.stderr, run.stderr[-3000:]


def test_the_server_takes_only_environments_that_start_the_same(server):
    same = dict(server.environment)
    assert server.serves(same)
    assert server.serves(dict(same, TORCHLINT_SOMETHING="1", PYTEST_CURRENT_TEST="x", NO_COLOR="1"))
    assert not server.serves(dict(same, PYTHONPATH="/elsewhere"))  # read when Python starts
    assert not server.serves(dict(same, TORCH_LOGS="+dynamo"))  # read when torch is imported
    assert not server.serves({k: v for k, v in same.items() if k != "PATH"})


def test_popen_forks_only_a_warm_single_threaded_process_running_a_torchlint_module():
    code = textwrap.dedent("""
        import subprocess, sys, threading
        from torchlint.runtime.parent import warm_start
        from torchlint.runtime.parent.warm_start import module_command
        command = [*module_command(sys.executable, "torchlint.runtime.child_env"), "x"]
        kinds = [type(warm_start.popen(command)).__name__]
        warm_start.enable()
        kinds.append(type(warm_start.popen(command)).__name__)
        kinds.append(type(warm_start.popen([sys.executable, "-c", "pass"])).__name__)
        stop = threading.Event()
        thread = threading.Thread(target=stop.wait)
        thread.start()
        kinds.append(type(warm_start.popen(command)).__name__)
        stop.set()
        print(" ".join(kinds))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.split() == ["Popen", "ForkedProcess", "Popen", "Popen"], result.stderr


def test_a_forked_process_reports_its_status_and_signal_as_popen_does(tmp_path):
    code = textwrap.dedent("""
        import signal, sys
        from torchlint.runtime.parent import warm_start
        from torchlint.runtime.parent.warm_start import module_command
        warm_start.enable()
        statuses = []
        for module in ("tests_exit_three", "tests_killed"):
            process = warm_start.popen([*module_command(sys.executable, module)], stdout=-1)
            statuses.append((process.wait(timeout=30), process.stdout.read().decode().strip()))
        print(statuses)
    """)
    (tmp_path / "tests_exit_three.py").write_text("print('three')\nraise SystemExit(3)\n")
    (tmp_path / "tests_killed.py").write_text("import os, signal\nprint('killed', flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert result.stdout.strip() == str([(3, "three"), (-9, "killed")]), result.stderr


def test_runs_sent_together_run_together(server, tmp_path):
    """Tests start two runs at once (two threads): the server must not queue the second."""
    from concurrent.futures import ThreadPoolExecutor

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.py").write_text(
            "import pathlib, time\nstarted = time.time()\ntime.sleep(2)\n"
            "pathlib.Path('span').write_text(f'{started} {time.time()}')\n")

    def run(name: str) -> int:
        return server.run(["run", "train.py", "--device", "cpu", "-q"], cwd=tmp_path / name, env=dict(os.environ),
                          timeout=120)[0]

    with ThreadPoolExecutor(max_workers=2) as pool:
        assert list(pool.map(run, ("a", "b"))) == [0, 0]
    (a_start, a_end), (b_start, b_end) = (map(float, (tmp_path / n / "span").read_text().split()) for n in "ab")
    assert a_start < b_end and b_start < a_end  # the two sleeps overlapped


def test_a_caller_that_compiled_in_process_is_still_served(server):
    """Inductor writes `_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR` into its process's environment
    before it loads a kernel. A test worker that once compiled in process (the minifier's tests
    do) then differed from its server, and every later run of that worker started cold."""
    import inspect

    from torch._inductor.codecache import CppPythonBindingsCodeCache

    written = inspect.getsource(CppPythonBindingsCodeCache._load_library_inner)
    assert 'os.environ["_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR"]' in written  # torch still writes it so
    assert server.serves(dict(server.environment, _TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR="140025822628896"))
