"""The dataloader probe: the share of the time between optimizer steps spent waiting for a
DataLoader's next batch (TL741), per creation line, and the report section that shows it
(examples/runtime/dataloader). The buggy loader sleeps 10 ms per sample in the main process,
160 ms per batch against a step of a few ms (tens on a busy machine); the fixed one serves
samples from memory: wide margins either side of the 30% threshold."""

from __future__ import annotations

import shutil
import textwrap

import pytest

pytest.importorskip("torch")

from conftest import EXAMPLES, ROOT, torchlint_run  # noqa: E402

pytestmark = pytest.mark.slow

FOLDER = EXAMPLES / "dataloader"
LOADER_LINE = 33  # the DataLoader(...) line of both programs


def run(script, *options: str, cwd=ROOT, output: str = "json"):
    return torchlint_run(str(script), "-q", "--output-format", output, *options, cwd=cwd, timeout=180)


@pytest.fixture(scope="module")
def buggy():
    result = run(FOLDER / "buggy" / "train.py")
    assert result.report["outcome"]["status"] == "completed", result.stdout + result.stderr
    return result


def test_a_loader_the_loop_waits_on_is_reported_at_its_creation_line(buggy):
    (finding,) = buggy.findings("runtime only")
    assert (finding["code"], finding["location"]["row"], finding["severity"]) == ("TL741", LOADER_LINE, "info")
    message = finding["message"]
    assert message.startswith("the training loop waited for this DataLoader's next batch ")
    assert "of the time between optimizer steps (7 steps of" in message
    assert "num_workers=0, pin_memory=False, batch_size=16" in message
    assert "`num_workers=4` or more" in message and "`pin_memory=True` when the model is on a GPU" in message
    assert finding["evidence"][0]["data"]["share"] > 0.3


def test_the_measurement_is_published_per_loader(buggy):
    published = buggy.report["dataloader"]
    assert (published["device"], published["steps"], published["threshold"]) == ("cpu", 7, 0.3)
    (loader,) = published["loaders"]
    assert loader["at"][1] == LOADER_LINE and loader["batches"] == 8 and loader["num_workers"] == 0
    assert loader["share"] > 0.3 and loader["mean_wait_ms"] > 100  # 16 samples of 10 ms each


def test_a_loader_serving_from_memory_is_not_reported_but_still_measured():
    result = run(FOLDER / "fixed" / "train.py")
    assert result.findings("runtime only") == []
    assert result.returncode == 0, result.stdout + result.stderr
    (loader,) = result.report["dataloader"]["loaders"]
    assert loader["batches"] == 8 and loader["share"] < 0.3


def test_the_threshold_option_reaches_the_probe():
    """The buggy loader, reported at the default 30%, is not at 100%: no share exceeds it."""
    result = run(FOLDER / "buggy" / "train.py", "--dataloader-threshold", "100")
    assert result.findings("runtime only") == [] and result.report["dataloader"]["threshold"] == 1.0
    (loader,) = result.report["dataloader"]["loaders"]
    assert loader["share"] > 0.3


def test_under_fake_cuda_the_section_says_the_timing_is_the_cpus_and_nothing_is_reported():
    result = run(FOLDER / "buggy" / "train.py", "--device", "fake-cuda", output="text")
    assert "0 static findings; 0 runtime-only findings." in result.stderr
    assert "input pipeline: time waiting for each DataLoader's batches" in result.stderr
    assert "the step time is that of the CPU standing in for a GPU" in result.stderr
    assert f"buggy/train.py:{LOADER_LINE}  num_workers=0, pin_memory=False, batch_size=16: 8 batches" in result.stderr


def test_it_confirms_tl405_at_a_loader_without_num_workers(tmp_path):
    shutil.copy(FOLDER / "buggy" / "train.py", tmp_path / "train.py")
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nextend-select = ["TL405"]\n')
    result = run("train.py", cwd=tmp_path)
    (static,) = [f for f in result.findings() if f["code"] == "TL405"]
    assert (static["status"], static["location"]["row"]) == ("confirmed", LOADER_LINE)
    assert "the training loop waited for this DataLoader's next batch" in static["evidence"][0]["detail"]
    # The same measurement: no TL741 beside the confirmed TL405.
    assert [f["code"] for f in result.findings()] == ["TL405"]


def test_a_large_share_of_a_few_milliseconds_is_not_reported(tmp_path):
    """Five steps waiting 2 ms each: most of the step time, 10 ms in all, within the noise of
    a busy machine and nothing a change wins back."""
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import time
        import torch
        from torch.utils.data import DataLoader, Dataset

        class Quick(Dataset):
            def __len__(self):
                return 6

            def __getitem__(self, index):
                time.sleep(0.002)
                return torch.ones(2)

        model = torch.nn.Linear(2, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch in DataLoader(Quick(), batch_size=1):
            optimizer.zero_grad()
            model(batch).sum().backward()
            optimizer.step()
    """))
    result = run(tmp_path / "train.py", cwd=tmp_path)
    (loader,) = result.report["dataloader"]["loaders"]
    assert loader["batches"] == 6
    # What is judged is the wait the run measured: on a loaded machine the 2 ms sleeps take
    # longer (and the steps too, so the share moves): past 50 ms in all the wait is worth a
    # word after all; below it, never, whatever its share.
    waited_ms = loader["mean_wait_ms"] * loader["batches"]
    assert result.findings("runtime only") == [] or waited_ms >= 50, (waited_ms, result.findings("runtime only"))
