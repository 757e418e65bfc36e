"""The shapes probe: ops whose input shape makes their result constant, reported at the user's
line with the shape (examples/runtime/shapes), on the CPU."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from conftest import EXAMPLES, ROOT, torchlint_run  # noqa: E402

pytestmark = pytest.mark.slow


def run(script: str):
    result = torchlint_run(str(EXAMPLES / "shapes" / script), "--device", "cpu", "-q", "--output-format", "json", cwd=ROOT, timeout=180)
    return result.findings("runtime only"), result


def test_one_output_unit_under_a_multi_class_head():
    findings, _ = run("buggy/train.py")
    by_line = {f["location"]["row"]: f for f in findings if f["code"] == "TL733"}
    assert set(by_line) == {16, 19}  # the loss call and the softmax, once each over 3 epochs
    assert by_line[16]["message"].startswith("`cross_entropy` over dimension 1 of a tensor of shape (64, 1)")
    assert "the loss is exactly 0 for every sample" in by_line[16]["message"]
    assert "`softmax` over dimension 1" in by_line[19]["message"] and "1 everywhere" in by_line[19]["message"]
    # A zero loss also starves every parameter: the gradient-flow probe says so too.
    assert {"TL730", "TL732"} <= {f["code"] for f in findings}


def test_the_binary_head_is_silent():
    findings, result = run("fixed/train.py")
    assert findings == []
    assert result.returncode == 0, result.stdout + result.stderr
