"""On a real GPU (`--device cuda`): what fake-cuda simulates, checked against CUDA itself.
Skipped without a GPU; CI has none, so these run where one is lent (`pytest -m gpu`)."""

from __future__ import annotations

import pytest

from conftest import EXAMPLES, ROOT, torchlint_run

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.gpu, pytest.mark.slow,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def run_example(*parts: str, args: tuple[str, ...] = ()):
    return torchlint_run(str(EXAMPLES.joinpath(*parts)), "--device", "cuda", "-q", "--output-format", "json", *args,
                         cwd=ROOT, timeout=300)


def test_syncs_are_counted_and_timed_on_the_gpu():
    (finding,) = [f for f in run_example("syncs", "buggy", "train.py").findings("runtime only") if f["code"] == "TL734"]
    assert finding["location"]["row"] == 22
    assert "at least 64 times in every optimizer step" in finding["message"]
    assert "ms per step for the GPU" in finding["message"]
    assert finding["evidence"][0]["data"]["waited_ms"] > 0


def test_one_sync_per_step_is_silent_on_the_gpu():
    assert "TL734" not in {f["code"] for f in run_example("syncs", "fixed", "train.py").findings()}
