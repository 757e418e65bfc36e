"""The syncs probe: a line that synchronises the host with the GPU more than once per step,
counted under fake-cuda (examples/runtime/syncs)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from conftest import EXAMPLES, ROOT, torchlint_run  # noqa: E402

pytestmark = pytest.mark.slow


def run(script: str):
    result = torchlint_run(str(EXAMPLES / "syncs" / script), "--device", "fake-cuda", "-q", "--output-format", "json", cwd=ROOT, timeout=180)
    return result.findings("runtime only"), result


def test_item_per_element_is_reported_at_its_line_with_the_count_per_step():
    findings, _ = run("buggy/train.py")
    (finding,) = findings
    assert (finding["code"], finding["location"]["row"], finding["severity"]) == ("TL734", 22, "info")
    assert "at least 64 times in every optimizer step (256 in all: `item` x256)" in finding["message"]


def test_one_read_per_step_is_silent():
    findings, result = run("fixed/train.py")
    assert findings == []
    assert result.report["outcome"]["host_syncs"]["total"] >= 4  # the loss.item() per step, counted but fine
