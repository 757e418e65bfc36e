"""The bundled runtime examples: each buggy program is confirmed, its fixed twin is not."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from conftest import EXAMPLES, ROOT, torchlint_run  # noqa: E402

pytestmark = pytest.mark.slow

CASES = [
    # (folder, script, extra args, codes the buggy program must confirm)
    ("device", "train.py", ["--device", "fake-cuda"], {"TL201"}),
    ("loss", "train.py", [], {"TL101", "TL102"}),
    ("inplace", "train.py", [], {"TL103"}),
    ("checkpoint", "resume.py", [], {"TL301"}),
    ("numpy", "evaluate.py", ["--device", "fake-cuda"], {"TL202"}),
]


@pytest.mark.parametrize("folder, script, extra, codes", CASES, ids=[c[0] for c in CASES])
def test_buggy_program_is_confirmed(folder, script, extra, codes):
    result = torchlint_run(str(EXAMPLES / folder / "buggy" / script), "-q", "--output-format", "json", *extra, cwd=ROOT)
    assert result.returncode == 1, result.stderr
    assert result.codes("confirmed") == codes
    for finding in result.findings("confirmed"):
        assert finding["evidence"][0]["detail"], finding
    # The crash each bug causes is explained by the confirmed finding, not reported twice.
    assert "TL702" not in {f["code"] for f in result.findings()}


@pytest.mark.parametrize("folder, script, extra, codes", CASES, ids=[c[0] for c in CASES])
def test_fixed_twin_is_not_confirmed(folder, script, extra, codes):
    result = torchlint_run(str(EXAMPLES / folder / "fixed" / script), "-q", "--output-format", "json", *extra, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.findings() == []
    assert result.report["outcome"]["status"] in ("completed", "stopped")


def test_fake_cuda_names_the_mixing_line_and_the_creating_line():
    """An unmodified script that takes its GPU branch; the factory without device= is in forward."""
    result = torchlint_run(str(EXAMPLES / "device" / "buggy" / "train.py"), "--device", "fake-cuda", "-q", cwd=ROOT)
    assert result.returncode == 1
    line = next(line for line in result.stderr.splitlines() if "evidence:" in line)  # the text report is on stderr
    assert "`add` at models.py:12 mixed cuda:0 and cpu" in line
    assert "created at models.py:11" in line and "without device=" in line
    assert "meta" not in result.stderr  # the simulation's device never leaks into messages
    assert result.seconds < 60
