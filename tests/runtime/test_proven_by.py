"""A rule's ``proven_by`` error confirms its finding when the program dies of it on that line.

Plain data (the child's outcome event as it would arrive), with the real rule classes, so
each rule's declared error text is checked against the message torch really raises."""

from __future__ import annotations

import pytest

from torchlint.findings import Finding, Location
from torchlint.plugins.rules.float_class_index_target import FloatClassIndexTarget
from torchlint.plugins.rules.inplace_on_grad_tensor import InplaceOnGradTensor
from torchlint.plugins.rules.load_without_map_location import BOTH_KEYWORDS, LoadWithoutMapLocation
from torchlint.plugins.rules.load_without_map_location_anywhere import LoadWithoutMapLocationAnywhere
from torchlint.plugins.rules.load_without_weights_only import LoadWithoutWeightsOnly
from torchlint.plugins.rules.numpy_on_device_or_grad_tensor import NumpyOnDeviceOrGradTensor
from torchlint.plugins.rules.tensor_without_device import TensorWithoutDevice
from torchlint.runtime.merge.matching import merge
from torchlint.runtime.merge.child_result import ChildResult

RULES = {rule.code: rule for rule in (FloatClassIndexTarget, InplaceOnGradTensor, LoadWithoutMapLocation,
                                      LoadWithoutMapLocationAnywhere, LoadWithoutWeightsOnly, NumpyOnDeviceOrGradTensor,
                                      TensorWithoutDevice)}
START = {"event": "start", "probes": [{"name": "device", "confirms": ["TL201"], "runtime_code": "TL701"},
                                      {"name": "autograd", "confirms": ["TL103"], "runtime_code": "TL705"}]}


def raised(script: str, type_name: str, message: str, lines: list[int]) -> ChildResult:
    """The outcome of a program that died at the last of ``lines`` (its traceback, outermost first)."""
    frames = "".join(f'  File "{script}", line {line}, in <module>\n    code\n' for line in lines)
    traceback = f"Traceback (most recent call last):\n{frames}{type_name}: {message}\n"
    outcome = {"event": "outcome", "status": "raised", "optimizer_steps": 0, "forward_calls": 1,
               "exception": {"type": type_name, "message": message, "at": [script, lines[-1]], "traceback": traceback,
                             "explained_by": None}}
    return ChildResult(events=[START, outcome], returncode=0, timed_out=False, seconds=1.0, script=script)


def run(tmp_path, code: str, line: int, result: ChildResult, message: str = "static message"):
    finding = Finding(code, code.lower(), message, str(tmp_path / "train.py"), Location(line, 5, line, 30))
    findings, _ = merge([finding], result, enabled=set(RULES), cwd=tmp_path, timeout=10, rules=RULES)
    return findings


# The messages torch 2.13 raises (TL108's on the CPU; TL202's as CUDA and fake-cuda raise it).
CASES = [
    ("TL202", "TypeError", "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."),
    ("TL202", "TypeError", "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."),
    ("TL302", "UnpicklingError", "Weights only load failed. This file can still be loaded, to do so you have two options"),
    # TL303, TL301's opt-in rest, is proven by the same refusal of CUDA storages
    ("TL303", "RuntimeError", "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. "
                              "If you are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu')"),
    ("TL201", "RuntimeError", "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"),
    ("TL108", "RuntimeError", "expected target dtype to be Long or Byte, but got Float"),
    ("TL108", "RuntimeError", "expected scalar type Long but found Float"),
    ("TL103", "RuntimeError", "one of the variables needed for gradient computation has been modified by an inplace operation: "
                              "[torch.FloatTensor [4]] is at version 1; expected version 0 instead."),
    ("TL103", "RuntimeError", "a leaf Variable that requires grad is being used in an in-place operation."),
    ("TL103", "RuntimeError", "Output 1 of Split is a view and is being modified inplace. This view is the output "
                              "of a function that returns multiple views. Such functions do not allow the output views to be "
                              "modified inplace. You should replace the inplace operation by an out-of-place one."),
]


@pytest.mark.parametrize(("code", "type_name", "message"), CASES)
def test_the_error_a_rule_predicts_confirms_it_on_its_line(tmp_path, code, type_name, message):
    script = str(tmp_path / "train.py")
    findings = run(tmp_path, code, 7, raised(script, type_name, message, [12, 7]))
    statuses = {(f.code, f.location.line): f.evidence[0].status for f in findings}
    # confirmed by the crash, which then needs no TL702 of its own
    assert statuses == {(code, 7): "confirmed"}
    evidence = findings[0].evidence[0]
    assert type_name in evidence.detail and evidence.data["raised_at"][1] == 7


@pytest.mark.parametrize(("code", "type_name", "message"), CASES[:1] + CASES[2:3])
def test_a_line_below_the_flagged_one_on_the_traceback_counts(tmp_path, code, type_name, message):
    # the flagged call (line 7) called a helper that raised at line 30
    findings = run(tmp_path, code, 7, raised(str(tmp_path / "train.py"), type_name, message, [7, 30]))
    (finding,) = [f for f in findings if f.code == code]
    assert finding.evidence[0].status == "confirmed" and "at train.py:30 (called from this line)" in finding.evidence[0].detail


def test_the_same_error_elsewhere_or_another_error_proves_nothing(tmp_path):
    script = str(tmp_path / "train.py")
    numpy_error = "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
    elsewhere = run(tmp_path, "TL202", 7, raised(script, "TypeError", numpy_error, [12, 20]))
    assert {f.code: f.evidence[0].status for f in elsewhere} == {"TL202": "not probed", "TL702": "runtime only"}
    other_error = run(tmp_path, "TL202", 7, raised(script, "TypeError", "unsupported operand type(s)", [7]))
    assert {f.code: f.evidence[0].status for f in other_error} == {"TL202": "not probed", "TL702": "runtime only"}
    other_type = run(tmp_path, "TL201", 7, raised(script, "ValueError", "Expected all tensors to be on the same device", [7]))
    # The line ran (it raised), so it is not "not reached"; the error proves nothing either.
    assert {f.code: f.evidence[0].status for f in other_type}["TL201"] == "not probed"


def test_without_the_rule_classes_nothing_is_proven(tmp_path):
    script = str(tmp_path / "train.py")
    finding = Finding("TL202", "tl202", "m", script, Location(7, 5, 7, 30))
    result = raised(script, "TypeError", "can't convert cuda:0 device type tensor to numpy.", [7])
    findings, _ = merge([finding], result, enabled={"TL202"}, cwd=tmp_path, timeout=10, rules={})
    assert {f.code: f.evidence[0].status for f in findings} == {"TL202": "not probed", "TL702": "runtime only"}


def test_tl301_speaking_for_tl302_is_proven_by_the_weights_only_refusal(tmp_path):
    # With both rules on, a bare load is one TL301 finding naming weights_only too.
    script = str(tmp_path / "train.py")
    refusal = "Weights only load failed. This file can still be loaded, to do so you have two options"
    both = run(tmp_path, "TL301", 7, raised(script, "UnpicklingError", refusal, [7]), message=f"{BOTH_KEYWORDS}: ...")
    assert {f.code: f.evidence[0].status for f in both} == {"TL301": "confirmed"}
    # A map_location-only finding is not what the refusal proves.
    alone = run(tmp_path, "TL301", 7, raised(script, "UnpicklingError", refusal, [7]),
                message="`torch.load` without `map_location`: ...")
    assert {f.code: f.evidence[0].status for f in alone}["TL301"] != "confirmed"


def test_a_finding_the_static_phase_dropped_is_confirmed_by_the_error_it_predicts(tmp_path):
    """The static phase took a CUDA checkpoint for a same-process round trip and dropped
    TL301; loading it on a machine without CUDA raised the very error TL301 predicts."""
    script = str(tmp_path / "train.py")
    dropped = Finding("TL301", "tl301", "`torch.load` without `map_location`: ...", script, Location(7, 5, 7, 30))
    deserialize = ("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you are "
                   "running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map your "
                   "storages to the CPU.")
    findings, _ = merge([], raised(script, "RuntimeError", deserialize, [7]), enabled=set(RULES), cwd=tmp_path, timeout=10,
                        rules=RULES, refuted=[dropped])
    statuses = {(f.code, f.location.line): f.evidence[0].status for f in findings}
    assert statuses == {("TL301", 7): "confirmed"}  # and no TL702 beside it: the crash is explained


def test_a_runtime_rule_that_names_the_static_rule_confirms_it_instead_of_standing_beside_it(tmp_path):
    from torchlint.plugins.probes.invariants import GradientsNotCleared

    script = str(tmp_path / "train.py")
    static = Finding("TL602", "step-without-zero-grad", "`optimizer.step()` ...", script, Location(9, 5, 9, 21))
    start = {"event": "start", "probes": [{"name": "invariants", "confirms": [], "runtime_code": "TL745"}]}
    seen = {"event": "evidence", "probe": "invariants", "code": None, "runtime_code": "TL745", "at": [script, 9],
            "message": "the gradients of step 1 were still in .grad at step 2", "sites": []}
    outcome = {"event": "outcome", "status": "completed", "optimizer_steps": 3, "forward_calls": 3}
    result = ChildResult(events=[start, seen, outcome], returncode=0, timed_out=False, seconds=1.0, script=script)
    rules = {**RULES, "TL745": GradientsNotCleared}
    findings, _ = merge([static], result, enabled={"TL602", "TL745"}, cwd=tmp_path, timeout=10, rules=rules)
    assert [(f.code, f.evidence[0].status) for f in findings] == [("TL602", "confirmed")]
    assert "still in .grad" in findings[0].evidence[0].detail
    elsewhere = dict(seen, at=[script, 30])
    result = ChildResult(events=[start, elsewhere, outcome], returncode=0, timed_out=False, seconds=1.0, script=script)
    findings, _ = merge([static], result, enabled={"TL602", "TL745"}, cwd=tmp_path, timeout=10, rules=rules)
    assert sorted((f.code, f.evidence[0].status) for f in findings) == [("TL602", "not probed"), ("TL745", "runtime only")]


def test_a_compile_failure_the_program_died_of_is_reported_once(tmp_path):
    from torchlint.plugins.probes.compile import CompileFailure

    script = str(tmp_path / "train.py")
    message = "backend='inductor' raised:\nCppCompileError: C++ compile error: error: 'x' was not declared"
    died = raised(script, "BackendCompilerFailed", message, [12])
    ladder = {"event": "evidence", "probe": "compile", "code": None, "runtime_code": "TL709", "at": [script, 12],
              "message": "torch.compile failed in C++ compile (Inductor) ...", "sites": [],
              "data": {"error": "BackendCompilerFailed", "message": "CppCompileError: C++ compile error: error: 'x' was not declared"}}
    died.events.insert(1, ladder)
    rules = {**RULES, "TL709": CompileFailure}
    findings, _ = merge([], died, enabled={"TL709"}, cwd=tmp_path, timeout=10, rules=rules)
    assert [f.code for f in findings] == ["TL709"]
    other = raised(script, "RuntimeError", "shape mismatch", [12])
    other.events.insert(1, ladder)
    findings, _ = merge([], other, enabled={"TL709"}, cwd=tmp_path, timeout=10, rules=rules)
    assert sorted(f.code for f in findings) == ["TL702", "TL709"]  # another error: two failures, two findings
