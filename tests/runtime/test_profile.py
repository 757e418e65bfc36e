"""`torchlint run --profile`: hot lines and modules from the trace, FLOPs, the hot-spot finding."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from conftest import ROOT, torchlint_run  # noqa: E402

from torchlint.runtime.profile_trace import analyse  # noqa: E402

HOTSPOT = ROOT / "examples" / "compile" / "hotspot"


def _x(name, ts, dur, cat="cpu_op", **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}


def test_trace_attribution_to_lines_modules_and_backward_through_sequence_numbers():
    events = [
        _x("module: Net", 0, 100, cat="user_annotation"),
        _x("module: enc.attn", 10, 60, cat="user_annotation"),
        _x("line: model.py:12", 10, 60),  # _RecordFunctionFast ranges are exported as cpu_op
        _x("aten::linear", 12, 50, **{"Sequence number": 7, "Input Dims": [[8, 64], [64, 64]]}),
        _x("aten::addmm", 14, 40, **{"Sequence number": 8}),
        _x("line: model.py:13", 75, 20),
        _x("aten::relu", 76, 10, **{"Sequence number": 9}),
        _x("autograd::engine::evaluate_function: AddmmBackward0", 200, 30, **{"Sequence number": 8}),
        _x("aten::mm", 202, 25),
        _x("autograd::engine::evaluate_function: ReluBackward0", 240, 5, **{"Sequence number": 9}),
        _x("Optimizer.step#SGD.step", 300, 50, cat="user_annotation"),
        _x("model.py(10): forward", 5, 90, cat="python_function"),
    ]
    lines = {"line: model.py:12": {"path": "/p/model.py", "line": 12, "function": "forward", "source": "h = self.attn(x)"},
             "line: model.py:13": {"path": "/p/model.py", "line": 13, "function": "forward", "source": "return h.relu()"}}
    modules = {"module: Net": "", "module: enc.attn": "enc.attn"}
    result = analyse(events, steps=1, lines=lines, modules=modules, window_us=400,
                     user_file=lambda name: "/p/model.py" if name == "model.py" else None)
    first = result["lines"][0]
    assert (first["path"], first["line"]) == ("/p/model.py", 12)
    assert first["forward_ms"] == pytest.approx(0.05) and first["backward_ms"] == pytest.approx(0.03)
    assert first["shapes"] == ["linear([8, 64], [64, 64])"]
    second = result["lines"][1]
    assert second["backward_ms"] == pytest.approx(0.005) and second["calls_per_step"] == 1
    attn = next(m for m in result["modules"] if m["path"] == "enc.attn")
    assert attn["forward_ms"] == pytest.approx(0.06) and attn["backward_ms"] == pytest.approx(0.03)
    assert result["split_ms"] == {"forward": 0.1, "backward": 0.035, "optimizer": 0.05, "other": pytest.approx(0.215)}
    ops = {o["name"]: o for o in result["ops"]}
    assert ops["aten::linear"]["self_ms"] == pytest.approx(0.01)  # 50 - the nested addmm's 40
    [function] = result["functions"]
    assert (function["path"], function["line"], function["function"]) == ("/p/model.py", 10, "forward")


def test_the_other_probes_work_is_no_lines_and_no_share_of_the_step():
    """The gradient-flow probe takes norms in an optimizer hook, inside the program's
    `optimizer.step()` line; the autograd probe detaches each saved tensor inside the op that
    saves it. Neither is the program's time."""
    events = [
        _x("train.py(20): main", 0, 400, cat="python_function"),
        _x("line: train.py:18", 10, 50),
        _x("model.py(10): forward", 10, 50, cat="python_function"),
        _x("aten::linear", 12, 40, **{"Sequence number": 1}),
        _x("/t/plugins/probes/autograd/probe.py(140): _pack", 20, 6, cat="python_function"),
        _x("aten::detach", 21, 4),
        _x("line: train.py:22", 100, 200),
        _x("Optimizer.step#SGD.step", 100, 200, cat="user_annotation"),
        _x("/t/plugins/probes/gradient_flow/probe.py(120): _before_step", 110, 80, cat="python_function"),
        _x("/t/plugins/probes/gradient_flow/probe.py(140): _norms", 112, 70, cat="python_function"),
        _x("aten::linalg_vector_norm", 115, 60),
        _x("aten::add_", 200, 30),
    ]
    user = {"train.py": "/p/train.py", "model.py": "/p/model.py"}
    result = analyse(events, steps=1, window_us=400, user_file=user.get,
                     probe_file=lambda name: name.startswith("/t/plugins/probes/"))
    by_line = {r["name"]: r for r in result["lines"]}
    assert by_line["train.py:22"]["ops"] == ["aten::add_"] and by_line["train.py:22"]["forward_ms"] == pytest.approx(0.03)
    assert by_line["train.py:18"]["ops"] == ["aten::linear"]
    assert {o["name"] for o in result["ops"]} == {"aten::linear", "aten::add_"}
    assert result["probes_ms"] == pytest.approx(0.086)  # the two outermost probe frames: 80 + 6 us
    assert result["split_ms"]["optimizer"] == pytest.approx(0.12)  # 200 us less the 80 of the hook
    # Without the predicate (a trace read by another tool), everything is the program's.
    plain = analyse(events, steps=1, window_us=400, user_file=user.get)
    assert "aten::linalg_vector_norm" in {r["name"]: r for r in plain["lines"]}["train.py:22"]["ops"]


def test_profile_names_the_hot_line_and_writes_the_report(tmp_path):
    run = torchlint_run("train.py", "--profile", "--profile-steps", "2", "--steps", "4", "--report", str(tmp_path / "out"),
                        "--output-format", "json", cwd=HOTSPOT, timeout=240)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]  # a hot spot is information
    [hot] = [f for f in run.findings() if f["code"] == "TL712"]
    assert (hot["filename"], hot["location"]["row"], hot["severity"]) == ("models.py", 24, "info")
    assert "cdist" in hot["message"]
    profile = run.report["profile"]
    assert profile["profiled_steps"] == 2 and profile["step_unit"] == "optimizer step"
    top = profile["lines"][0]
    assert top["source"].startswith("dist = torch.cdist(") and top["backward_ms"] > 0
    modules = {m["path"] for m in profile["modules"]}
    assert {"encoder", "encoder.proj", "encoder.norm", "head"} <= modules
    assert profile["split_ms"]["forward"] > 0 and profile["split_ms"]["backward"] > 0 and profile["split_ms"]["optimizer"] > 0
    # The probes' own work (the gradient-flow probe's norms in the optimizer's hooks, the loss
    # the nonfinite probe reads after backward) is theirs, not the program's lines'.
    step_line = next(line for line in profile["lines"] if line["source"] == "optimizer.step()")
    assert not {"aten::_foreach_norm", "aten::linalg_vector_norm"} & set(step_line["ops"]), step_line
    assert profile["probes_ms"] > 0
    flops = {m["path"]: m["flops"] for m in profile["flops"]["modules"]}
    assert flops["encoder.proj"] == 2 * 64 * 32 * 2048 and flops["head"] == 2 * 64 * 1024 * 10
    out = tmp_path / "out"
    trace = json.loads((out / "trace.json").read_text())
    names = {e.get("name") for e in trace["traceEvents"]}
    assert "line: models.py:24" in names and "module: encoder.proj" in names
    assert any(e.get("cat") == "python_function" for e in trace["traceEvents"])
    assert json.loads((out / "findings.json").read_text())["profile"]["lines"][0]["line"] == 24
    page = (out / "report.html").read_text()
    assert "<svg" in page and "models.py:24" in page and "encoder.proj" in page


def test_profile_under_fake_cuda_counts_flops_without_timings(write, tmp_path):
    write("train.py", """
        import torch
        from torch import nn
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            loss = model(torch.randn(32, 64, device=device)).sum()
            loss.backward()
            opt.step()
    """)
    run = torchlint_run("train.py", "--profile", "--device", "fake-cuda", "--output-format", "json", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    profile = run.report["profile"]
    assert "no timings" in profile["skipped"] and "step_ms" not in profile
    flops = {m["path"]: m["flops"] for m in profile["flops"]["modules"]}
    assert flops["0"] == 2 * 32 * 64 * 128 and flops["2"] == 2 * 32 * 128 * 10


def test_a_program_too_short_to_profile_says_so(write, tmp_path):
    write("train.py", """
        import torch
        torch.nn.Linear(4, 2)(torch.randn(3, 4))
    """)
    run = torchlint_run("train.py", "--profile", "--output-format", "json", cwd=tmp_path)
    assert run.returncode == 0
    profile = run.report["profile"]
    assert "warm-up" in profile["skipped"] and profile["flops"]["forward_total"] == 2 * 3 * 4 * 2
