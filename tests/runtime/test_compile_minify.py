"""`torchlint run --minify`: the graph Inductor failed on, shrunk, written as a script that
runs alone, and checked to fail the same way.

Two end-to-end runs (module-scoped, shared by the tests that read them) on the examples
whose sitecustomize.py gives every process a torch with the tutorial's injected Inductor bug
(`neg` as `2 * x`: a drift; or as C++ that g++ rejects: a compile error); the budget and the
honest "could not reproduce" are checked in process on a healthy torch.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from conftest import ROOT, torchlint_run  # noqa: E402

EXAMPLES = ROOT / "examples" / "compile"


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def with_bug(example: Path, env: dict) -> dict:
    """The example's folder on PYTHONPATH: its sitecustomize.py injects the bug in every process."""
    paths = [str(example), *filter(None, [os.environ.get("PYTHONPATH")])]
    return dict(env, PYTHONPATH=os.pathsep.join(paths))


def minify_run(example: str, inductor_cache: dict, report: Path):
    folder = EXAMPLES / example
    run = torchlint_run("train.py", "--minify", "--report", str(report), "--output-format", "json", "--timeout", "500",
                        cwd=folder, timeout=540, env=with_bug(folder, inductor_cache))
    return run, run.report["compile"]


def run_alone(script: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=180, cwd=os.path.dirname(script),
                          env=dict(os.environ, **env))


@pytest.fixture(scope="module")
def drift(inductor_cache, tmp_path_factory):
    report = tmp_path_factory.mktemp("drift-report")
    run, result = minify_run("accuracy_drift", inductor_cache, report)
    return run, result, report


@pytest.fixture(scope="module")
def compile_error(inductor_cache, tmp_path_factory):
    report = tmp_path_factory.mktemp("cxx-report")
    run, result = minify_run("compile_error", inductor_cache, report)
    return run, result, report


@pytest.mark.slow
def test_a_drift_is_minified_to_the_op_at_the_users_line(drift):
    run, result, report = drift
    program = EXAMPLES / "accuracy_drift" / "train.py"
    [finding] = [f for f in run.findings() if f["code"] == "TL710"]
    # The finding stays at the program's call of its compiled model, never in Inductor's files.
    assert (finding["filename"], finding["location"]["row"]) == ("train.py", line_of(program, "mse_loss(compiled(x), y)"))
    minified = result["minify"]
    assert minified["status"] == "minified" and minified["kind"] == "accuracy", minified
    assert minified["nodes_after"] < minified["nodes_before"] and minified["ops_after"] < minified["ops_before"]
    neg_line = line_of(program, "torch.neg(self.floor)")
    assert [(op["op"], os.path.basename(op["at"][0]), op["at"][1]) for op in minified["ops"]] == [("aten.neg.default", "train.py", neg_line)]
    assert minified["verified"]["same"] is True and minified["verified"]["kind"] == "accuracy"
    assert f"aten.neg.default at train.py:{neg_line}" in finding["message"] and "reproduces the same failure" in finding["message"]
    assert [e["data"]["minify"]["script"] for e in finding["evidence"]] == [minified["script"]]  # the finding's data
    assert Path(minified["script"]).parent == report / "minify" / "Gate"
    # The debug dump of the failing graph, linked from the HTML report relative to its folder.
    assert {"fx_graph_runnable.py", "output_code.py"} <= set(minified["debug_files"])
    assert all(Path(path).is_file() for path in minified["debug_files"].values())
    html = (report / "report.html").read_text()
    assert 'href="minify/Gate/repro.py"' in html and re.search(r'href="minify/Gate/debug/[^"]+/output_code.py"', html)


@pytest.mark.slow
def test_the_minified_drift_reproduces_alone_and_only_with_the_bug(drift, inductor_cache):
    _run, result, _report = drift
    script = result["minify"]["script"]
    buggy = run_alone(script, with_bug(EXAMPLES / "accuracy_drift", inductor_cache))
    assert buggy.returncode == 1 and "TORCHLINT-REPRO: accuracy: output 0 differs from eager" in buggy.stdout + buggy.stderr, buggy.stderr[-2000:]
    # On a healthy torch the same script passes: it tests the compiler, not a fixed answer.
    healthy = run_alone(script, inductor_cache)
    assert healthy.returncode == 0 and "TORCHLINT-REPRO: ok" in healthy.stdout, healthy.stderr[-2000:]


@pytest.mark.slow
def test_a_compile_error_names_its_stage_and_first_compiler_line_and_its_repro_fails_the_same_way(compile_error, inductor_cache):
    run, result, _report = compile_error
    program = EXAMPLES / "compile_error" / "train.py"
    [finding] = [f for f in run.findings() if f["code"] == "TL709"]
    assert (finding["filename"], finding["location"]["row"]) == ("train.py", line_of(program, "compiled(x).shape"))
    assert "error: no match for" in finding["message"] and "Command:" not in finding["message"]
    minified = result["minify"]
    assert minified["status"] == "minified" and minified["stage"] == "C++ compile (Inductor)", minified
    assert minified["error_line"].startswith("error: no match for") and "operator*" in minified["error_line"]
    assert minified["nodes_after"] < minified["nodes_before"]
    assert [op["op"] for op in minified["ops"]] == ["aten.neg.default"]
    assert minified["ops"][0]["at"][1] == line_of(program, "torch.neg(self.floor)")
    assert minified["verified"] == {**minified["verified"], "same": True, "kind": "compile", "error_line": minified["error_line"]}
    alone = run_alone(minified["script"], with_bug(EXAMPLES / "compile_error", inductor_cache))
    assert alone.returncode == 1 and minified["error_line"] in alone.stderr, alone.stderr[-2000:]


# -- in process, on a healthy torch ---------------------------------------------------------------

def test_the_budget_is_honoured_and_reported(tmp_path):
    from torchlint.runtime.compile.minify import minify
    from torchlint.runtime.compile.minify_report import minify_lines, minified_note

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    record = minify(model, [((torch.randn(2, 4),), {})], {"accuracy": {"ok": False, "backend": "inductor"}},
                    folder=str(tmp_path / "m"), timeout=2.0, is_user=lambda path: False)
    # The minifier's process is what the budget bounds (it cannot even import torch and compile
    # in 2 s); capturing the graph before it runs in this process, whose time load decides.
    assert record["status"] == "timed out" and record["seconds"] < 10, record
    assert "2 s budget" in record["reason"] and "2 s budget" in minified_note(record)
    assert Path(record["graphs"][0]).is_file()  # the failing graph, not minified, is still there
    assert any("failing graph (not minified, runs alone)" in line for line in minify_lines(record, tmp_path))


@pytest.mark.parametrize("ending", ["finished", "failed", "stopped"])
def test_a_folder_a_stopped_minify_left_says_it_is_unfinished(tmp_path, monkeypatch, ending):
    from torchlint.runtime.compile import minify as minifying

    folder = tmp_path / "m"
    seen = []

    def work(*args, **kwargs):
        seen.append((folder / minifying.UNFINISHED).is_file())  # written before anything else
        if ending == "failed":
            raise RuntimeError("the probe reports this")
        if ending == "stopped":
            raise KeyboardInterrupt  # Ctrl-C, or a signal, while the minifier runs
        return {"status": "minified"}

    monkeypatch.setattr(minifying, "_minify_into", work)
    model = torch.nn.Linear(4, 4)
    call = lambda: minifying.minify(model, [((torch.randn(2, 4),), {})], {"accuracy": {"ok": False, "backend": "inductor"}},
                                    folder=str(folder), timeout=60.0, is_user=lambda path: False)
    if ending == "finished":
        assert call() == {"status": "minified"}
    else:
        with pytest.raises(KeyboardInterrupt if ending == "stopped" else RuntimeError):
            call()
    assert seen == [True]
    assert (folder / minifying.UNFINISHED).is_file() == (ending == "stopped")


def test_a_stopped_command_takes_what_it_started_with_it(tmp_path):
    from torchlint.runtime.compile.minify import run_bounded

    pid_file = tmp_path / "grandchild.pid"
    code, seconds = run_bounded(["sh", "-c", f"sleep 60 & echo $! > {pid_file}; wait"], cwd=str(tmp_path), timeout=1.0,
                                log=str(tmp_path / "log"))
    assert code is None and seconds < 10
    grandchild = int(pid_file.read_text())
    for _ in range(50):  # killed; reaped by init shortly after
        if not Path(f"/proc/{grandchild}").exists() or "State:\tZ" in Path(f"/proc/{grandchild}/status").read_text():
            break
        time.sleep(0.1)
    else:
        pytest.fail("the command's own child outlived the budget")


@pytest.mark.slow
def test_a_failure_a_fresh_process_does_not_show_is_reported_not_minified(tmp_path, monkeypatch, inductor_cache):
    """The ladder's drift came from the program's own state (here: none at all, torch is
    healthy): the worker says so instead of minifying something else."""
    from torchlint.runtime.compile.minify import minify
    from torchlint.runtime.compile.minify_report import minify_lines

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", inductor_cache["TORCHINDUCTOR_CACHE_DIR"])
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    record = minify(model, [((torch.randn(2, 4),), {})], {"accuracy": {"ok": False, "backend": "inductor"}},
                    folder=str(tmp_path / "m"), timeout=150.0, is_user=lambda path: False)
    assert record["status"] == "not reproduced", record
    assert "fresh process" in record["reason"] and "script" not in record
    assert {"output_code.py", "fx_graph_runnable.py"} <= set(record["debug_files"])
    lines = minify_lines(record, tmp_path)
    assert any(line.startswith("    debug dump (of the fresh process's compile, which did not fail): ") for line in lines), lines


def test_failures_of_the_tracing_stages_are_not_minified():
    from torchlint.runtime.compile.minify import minify_kind

    kind, why = minify_kind({"failure": {"backend": "aot_eager", "stage": "AOTAutograd"}})
    assert kind is None and "AOTAutograd" in why
    kind, why = minify_kind({"accuracy": {"ok": False, "backend": "eager"}})
    assert kind is None and "backend eager" in why
    assert minify_kind({"accuracy": {"ok": True, "backend": "inductor"}}) == (None, "")
    assert minify_kind({"failure": {"backend": "inductor", "stage": "Inductor"}})[0] == "compile"


def test_the_probe_does_not_load_the_minifier_unless_a_failure_asks_for_it():
    code = ("import sys, torchlint.plugins.probes.compile.probe; "
            "print(sorted(m for m in sys.modules if m.startswith('torchlint.runtime.compile.minify') "
            "or m.startswith('torch._functorch.fx_minifier')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "['torchlint.runtime.compile.minify_report']"


def test_the_runs_own_timeout_cuts_the_budget_and_the_report_says_so(tmp_path):
    """--timeout comes first: with too little of it left, nothing is started and the
    ladder's finding is reported with the reason."""
    from types import SimpleNamespace

    from torchlint.plugins.probes.compile.probe import CompileProbe
    from torchlint.runtime.compile.minify_report import minify_lines

    probe = CompileProbe.__new__(CompileProbe)
    probe.minify_folder = str(tmp_path)
    probe.ctx = SimpleNamespace(options={"minify": True, "minify_timeout": 120.0}, deadline=time.monotonic() + 10,
                                progress=lambda message: None)
    result = {"accuracy": {"ok": False, "backend": "inductor"}}
    probe._minify(torch.nn.Linear(2, 2), [((torch.randn(1, 2),), {})], result, "Linear")
    record = result["minify"]
    assert record["status"] == "not attempted" and "raise --timeout" in record["reason"]
    assert record["budget_cut"] == "--minify-timeout cut to 0 s by the run's --timeout"
    assert not any(tmp_path.iterdir())  # nothing was written, no worker started
    assert minify_lines(record, tmp_path) == ["  minify: not attempted: the run's --timeout leaves no time to minify: raise --timeout"]
    # A ladder that found no Inductor failure leaves no minify record at all.
    clean = {"accuracy": {"ok": True, "backend": "inductor"}}
    probe._minify(torch.nn.Linear(2, 2), [((torch.randn(1, 2),), {})], clean, "Linear")
    assert "minify" not in clean
