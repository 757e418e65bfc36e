"""`torchlint run --compile`: graph breaks, recompilations, the backend ladder, accuracy, speed.

End-to-end runs use the eager/aot_eager rungs (seconds); Inductor runs in one `slow` test
with a persistent cache directory.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from conftest import ROOT, torchlint_run  # noqa: E402

EXAMPLES = ROOT / "examples" / "compile"


def _by_code(run, code):
    return [f for f in run.findings() if f["code"] == code]


def test_graph_breaks_and_recompilation_of_an_unmodified_training_script():
    run = torchlint_run("train.py", "--compile=eager", "--output-format", "json", cwd=EXAMPLES / "graph_break", timeout=240)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]  # graph breaks and recompiles are warnings
    breaks = {f["location"]["row"]: f for f in _by_code(run, "TL708")}
    assert set(breaks) == {21, 23}, breaks
    assert all(f["filename"] == "train.py" and f["status"] == "runtime only" and f["severity"] == "warning" for f in breaks.values())
    assert "Data-dependent branching" in breaks[21]["message"] and "[GB0170]" in breaks[21]["message"]
    assert "Tensor.item()" in breaks[23]["message"] and "capture_scalar_outputs" in breaks[23]["message"]  # the hint
    # De-duplicated with a count: one finding per place, the count in the message and the data.
    assert "(2x)" in breaks[21]["message"]
    recompiles = _by_code(run, "TL711")
    assert len(recompiles) == 1 and recompiles[0]["location"]["row"] == 19
    assert "size mismatch at index 0. expected 16, actual 8" in recompiles[0]["message"]
    result = run.report["compile"]
    assert result["model"] == "GatedMLP" and result["input_shapes"] == 2
    assert [r["backend"] for r in result["rungs"]] == ["eager"] and result["rungs"][0]["status"] == "ok"
    assert result["accuracy"]["ok"] is True
    assert result["speed"]["eager_ms"] > 0 and result["speed"]["compiled_ms"] > 0 and result["speed"]["speedup"] > 0
    # Dynamo's own warnings (a traceback per break) are not dumped on the user.
    assert "Graph break: from user code at" not in run.stderr


def test_compiled_output_mismatch_from_an_entry_names_the_tolerances():
    run = torchlint_run("train.py:build", "--compile", "--output-format", "json", cwd=EXAMPLES / "mismatch", timeout=240)
    assert run.returncode == 1, run.stdout + run.stderr[-3000:]  # a mismatch is an error
    [finding] = _by_code(run, "TL710")
    source = (EXAMPLES / "mismatch" / "train.py").read_text().splitlines()
    assert source[finding["location"]["row"] - 1].strip() == "def forward(self, x):"  # the model's forward
    assert "rtol=0.0001" in finding["message"] and "atol=1e-05" in finding["message"] and "float32" in finding["message"]
    result = run.report["compile"]
    assert [r["backend"] for r in result["rungs"]] == ["eager", "aot_eager"]
    assert result["accuracy"]["ok"] is False and result["accuracy"]["max_abs"] > 1e-4
    assert not _by_code(run, "TL708")


def test_a_model_that_compiles_cleanly_has_no_compile_findings_and_text_shows_the_ladder():
    run = torchlint_run("train.py", "--compile", "--steps", "2", cwd=EXAMPLES / "clean", timeout=240)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert "TL70" not in run.stderr and "TL71" not in run.stderr
    assert "eager      ok" in run.stderr and "aot_eager  ok" in run.stderr
    assert "graph breaks: 0 places" in run.stderr
    assert "accuracy (backend aot_eager vs eager, eval mode): matches" in run.stderr
    assert "x; compile" in run.stderr  # the speed ratio and the compile time


def test_compile_on_a_device_that_computes_no_values_is_skipped_not_failed(write, tmp_path):
    write("train.py", """
        import torch
        model = torch.nn.Linear(4, 2)
        model(torch.randn(3, 4)).sum().backward()
    """)
    run = torchlint_run("train.py", "--compile=eager", "--device", "meta", "--output-format", "json", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr[-2000:]
    assert "computes no values" in run.report["compile"]["skipped"]


def test_no_module_called_is_reported_in_the_result(write, tmp_path):
    write("train.py", "import torch\nprint(torch.ones(2).sum())\n")
    run = torchlint_run("train.py", "--compile=eager", "--output-format", "json", cwd=tmp_path)
    assert run.returncode == 0
    assert run.report["compile"]["skipped"] == "the program called no nn.Module with parameters and compiled nothing itself"


def test_compile_option_values(write, tmp_path):
    write("train.py", "x = 1\n")
    run = torchlint_run("train.py", "--compile=tensorrt", cwd=tmp_path)
    assert run.returncode == 2 and "tensorrt" in run.stderr
    # A bare --compile before the target would swallow it: say what to write instead.
    run = torchlint_run("--compile", "train.py", cwd=tmp_path)
    assert run.returncode == 2 and "torchlint run train.py --compile" in run.stderr


# -- in process: the ladder's localisation and the trace parsing ---------------------------------

GB_PAYLOAD = """Graph break in user code at /src/model.py:7
Graph Break Reason: Data-dependent branching
  Explanation: Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`).
  Hint: Use `torch.cond` to express dynamic control flow.

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html

User code traceback:
  File "/src/train.py", line 3, in <module>
"""


def test_structured_trace_records_are_deduplicated_with_counts():
    from torchlint.runtime.compile.check import summarise_trace

    artifact = {"artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"}}
    metrics = {"compilation_metrics": {"co_name": "forward", "co_filename": "/src/model.py", "co_firstlineno": 5,
                                       "recompile_reason": "0/0: tensor 'x' size mismatch at index 0. expected 3, actual 5"}}
    resume = {"compilation_metrics": {"co_name": "torch_dynamo_resume_in_forward_at_7", "co_filename": "/src/model.py",
                                      "co_firstlineno": 7, "recompile_reason": "1/0: tensor 'h' size mismatch"}}
    summary = summarise_trace([(artifact, GB_PAYLOAD), (artifact, GB_PAYLOAD), (metrics, None), (resume, None)])
    [gb] = summary["graph_breaks"]
    assert (gb["path"], gb["line"], gb["count"], gb["ref"]) == ("/src/model.py", 7, 2, "GB0170")
    assert gb["reason"] == "Data-dependent branching" and gb["hints"] == ["Use `torch.cond` to express dynamic control flow."]
    [rc] = summary["recompilations"]  # the resume function's recompile is its parent's
    assert rc["function"] == "forward" and rc["reasons"] == ["tensor 'x' size mismatch at index 0. expected 3, actual 5"]


MODE_PAYLOAD = """Graph break in user code at /venv/torch/utils/_device.py:122
Graph Break Reason: Unsupported Tensor.item() call with capture_scalar_outputs=False

User code traceback:
  File "/src/train.py", line 30, in <module>
    model(x)
  File "/src/model.py", line 15, in refine_step
    if h.abs().max().item() < 1e-6:
  File "/venv/torch/utils/_device.py", line 122, in __torch_function__
    return func(*args, **kwargs)

Traceback (most recent call last):
  File "/venv/torch/_dynamo/symbolic_convert.py", line 1950, in run
"""


def test_a_graph_break_under_a_torch_function_mode_is_placed_at_the_programs_line():
    """`torch.set_default_device` puts a TorchFunctionMode between the program and the op, and
    Dynamo calls the mode's frame "user code": the break belongs to the program's innermost line."""
    from torchlint.runtime.compile.check import summarise_trace

    artifact = {"artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"}}
    [gb] = summarise_trace([(artifact, MODE_PAYLOAD)], is_user=lambda path: path.startswith("/src/"))["graph_breaks"]
    assert (gb["path"], gb["line"]) == ("/src/model.py", 15)
    [gb] = summarise_trace([(artifact, MODE_PAYLOAD)])["graph_breaks"]  # without a classifier: Dynamo's word
    assert (gb["path"], gb["line"]) == ("/venv/torch/utils/_device.py", 122)
    # A break torch's own function makes on purpose (the optimizer's step) stays where Dynamo puts it.
    inside_step = MODE_PAYLOAD.replace("in __torch_function__", "in step").replace("_device.py", "optimizer.py")
    [gb] = summarise_trace([(artifact, inside_step)], is_user=lambda path: path.startswith("/src/"))["graph_breaks"]
    assert (gb["path"], gb["line"]) == ("/venv/torch/utils/optimizer.py", 122)


def test_the_first_failing_rung_names_the_stage_and_the_user_line(tmp_path):
    from torchlint.runtime.compile.check import CompileChecker

    source = tmp_path / "backend_user.py"
    source.write_text("def broken_backend(gm, example_inputs):\n    raise ValueError('no kernel for this graph')\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import backend_user
    finally:
        sys.path.remove(str(tmp_path))
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    checker = CompileChecker(model, [((torch.randn(2, 4),), {})], top="inductor", measure_speed=False,
                             is_user=lambda path: os.path.realpath(path) == os.path.realpath(source),
                             backends={"aot_eager": backend_user.broken_backend})
    result = checker.run()
    assert [(r["backend"], r["status"]) for r in result["rungs"]] == [("eager", "ok"), ("aot_eager", "failed")]
    failure = result["failure"]
    assert failure["stage"] == "AOTAutograd" and failure["error"] == "BackendCompilerFailed"
    assert "ValueError: no kernel for this graph" in failure["message"]
    assert failure["at"] == [str(source), 2]
    assert result["accuracy"]["ok"] and result["accuracy"]["backend"] == "eager"  # the rung that worked


def test_accuracy_tolerance_depends_on_dtype():
    from torchlint.runtime.compile.check import compare

    base = torch.ones(4)
    assert compare(base, base + 5e-6)["ok"]
    assert not compare(base, base + 1e-3)["ok"]
    assert compare(base.half(), (base + 1e-3).half())["ok"]
    assert compare(base.double(), base.double() + 1e-6)["ok"] is False
    assert compare((base, base), (base,))["ok"] is False


@pytest.mark.slow
def test_inductor_rung_with_a_persistent_cache(inductor_cache):
    run = torchlint_run("train.py:build", "--compile=inductor", "--output-format", "json", cwd=EXAMPLES / "graph_break",
                        timeout=400, env=inductor_cache)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    result = run.report["compile"]
    assert [(r["backend"], r["status"]) for r in result["rungs"]] == [("eager", "ok"), ("aot_eager", "ok"), ("inductor", "ok")]
    assert result["speed"]["backend"] == "inductor" and result["accuracy"]["ok"]
    assert any(Path(inductor_cache["TORCHINDUCTOR_CACHE_DIR"]).iterdir())  # the cache the next run starts warm from


def test_a_compiler_error_is_its_first_error_line_without_the_generated_files_path():
    from torchlint.runtime.compile.check import compiler_error

    text = ("C++ compile error\n\nCommand:\ng++ /tmp/cache/6a/c6ah.main.cpp -O3 -o /tmp/cache/6a/c6ah.main.so\n\nOutput:\n"
            "/tmp/cache/6a/c6ah.main.cpp: In function 'void kernel(const float*)':\n"
            "/tmp/cache/6a/c6ah.main.cpp:23:58: error: no match for 'operator*' (operand types are 'int' and 'Vectorized<float>')\n"
            "/tmp/cache/6a/c6ah.main.cpp:30:1: error: a later one\n")
    assert compiler_error(text) == "error: no match for 'operator*' (operand types are 'int' and 'Vectorized<float>')"
    assert compiler_error("ValueError: no kernel for this graph") is None


def test_the_code_inductor_generates_is_never_the_users(tmp_path, monkeypatch):
    from torchlint.runtime.frames import INTERNAL, USER, default_classifier

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    frames = default_classifier()
    assert frames.verdict(str(tmp_path / "cache" / "vi" / "cvipcq3k.py")) == INTERNAL
    assert frames.verdict(str(tmp_path / "train.py")) == USER
