"""`torchlint run --nproc-per-node 2` on the bundled distributed examples: two real ranks on
gloo started by torch's launcher. Each buggy program is reported at its line well within the
timeout; its fixed twin is clean. One run per program, shared by the tests that read it."""

from __future__ import annotations

import functools
import sys

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ranks reach the channel by an abstract socket")

from conftest import ROOT, torchlint_run  # noqa: E402

EXAMPLES = ROOT / "examples" / "distributed" / "runtime"
TIMEOUT = 90  # torchlint's own --timeout; the subprocess gets a little more
WAIT_TIMEOUT = 30  # for the program that only the timeout ends (the later --timeout wins); its ranks reach the wait in ~10 s


PROGRAMS = [(example, variant) for example in ("rank_conditional", "shape_mismatch", "rank_init", "rank_crash", "ddp_sampler")
            for variant in ("buggy", "fixed")]


#: Programs run with more than the defaults: the NCCL script on simulated GPUs, its output shown.
SPECIAL = {("nccl_ddp", ""): ("--device", "fake-cuda"), ("all_ranks_wait", ""): ("-q", "--timeout", str(WAIT_TIMEOUT))}
PROGRAMS[:0] = list(SPECIAL)  # the longest first, so they overlap the others


def _run(program: tuple[str, str]):
    example, variant = program
    extra = SPECIAL.get(program, ("-q",))
    return torchlint_run("train.py", "--nproc-per-node", "2", "--timeout", str(TIMEOUT), "--output-format", "json", *extra,
                         cwd=EXAMPLES / example / variant, timeout=TIMEOUT + 60)


@functools.lru_cache(maxsize=None)
def _all_runs() -> dict:
    """Every program once, a few at a time: a run spends most of its time starting processes
    and waiting for its ranks to meet, so overlapping them keeps the suite's added time low."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(PROGRAMS, pool.map(_run, PROGRAMS)))


def run(example: str, variant: str):
    return _all_runs()[(example, variant)]


def runtime_findings(result, code):
    return [f for f in result.findings() if f["code"] == code]


def test_a_collective_only_rank_0_calls_is_reported_at_its_line():
    result = run("rank_conditional", "buggy")
    # TL719 on its own, or the static TL803 (collective under a rank condition) confirmed by it.
    found = runtime_findings(result, "TL719") or [f for f in result.findings("confirmed") if f["code"] == "TL803"]
    assert result.returncode == 1 and len(found) == 1, result.stdout
    detail = found[0]["evidence"][0]["detail"]
    assert found[0]["location"]["row"] == 12 and "train.py:12 ran on rank 0 only" in detail
    assert "rank 1 called `all_reduce(float32[1])` at train.py:14" in detail
    assert result.seconds < TIMEOUT


def test_different_shapes_across_ranks_are_reported_with_both_shapes():
    result = run("shape_mismatch", "buggy")
    found = runtime_findings(result, "TL720")
    assert result.returncode == 1 and len(found) == 1, result.stdout
    assert found[0]["location"]["row"] == 12
    assert "float32[3]" in found[0]["message"] and "float32[2]" in found[0]["message"]
    # Gloo lets the rank with the shorter tensor finish: the other one raises when its peer
    # closes, unless torchlint, which read both calls before they reached gloo, stopped it first.
    assert result.report["outcome"]["status"] in ("stopped", "raised") and result.seconds < TIMEOUT


def test_a_rank_dependent_initialisation_is_reported_after_the_first_step():
    result = run("rank_init", "buggy")
    found = runtime_findings(result, "TL721")
    assert result.returncode == 1 and len(found) == 1, result.stdout
    assert found[0]["location"]["row"] == 27 and "weight (rank 0 vs rank 1)" in found[0]["message"]


def test_a_rank_that_crashes_is_named_with_its_line_and_the_other_rank_is_stopped():
    result = run("rank_crash", "buggy")
    crash = runtime_findings(result, "TL702")
    assert result.returncode == 1 and len(crash) == 1, result.stdout
    assert crash[0]["rank"] == 1 and crash[0]["location"]["row"] == 12
    assert crash[0]["message"].startswith("rank 1 raised KeyError")
    assert result.report["outcome"]["status"] == "raised" and result.seconds < TIMEOUT


def test_a_sampler_without_the_ranks_share_and_a_needless_find_unused_parameters():
    result = run("ddp_sampler", "buggy")
    sampler, flag = runtime_findings(result, "TL722"), runtime_findings(result, "TL723")
    assert result.returncode == 1 and len(sampler) == 1 and sampler[0]["location"]["row"] == 14, result.stdout
    assert "num_replicas=1" in sampler[0]["message"]
    # TL807 (the static rule) is confirmed instead when it reports this line.
    flag = flag or [f for f in result.findings("confirmed") if f["code"] == "TL807"]
    assert len(flag) == 1 and flag[0]["location"]["row"] == 16
    assert "in each of the first 3 optimizer steps" in (flag[0]["evidence"][0]["detail"])


@pytest.mark.parametrize("example", ["rank_conditional", "shape_mismatch", "rank_init", "rank_crash", "ddp_sampler"])
def test_the_fixed_twin_is_clean(example):
    result = run(example, "fixed")
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert result.findings() == [] and result.report["outcome"]["status"] == "completed"
    assert result.report["outcome"]["world_size"] == 2


def test_an_nccl_ddp_script_runs_on_simulated_gpus_one_per_rank_with_gloo():
    result = run("nccl_ddp", "")
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert result.findings() == [] and result.report["outcome"]["optimizer_steps"] == 2
    assert result.report["outcome"]["distributed_notes"] == ["backend 'nccl' run as 'gloo' (no GPU)"]
    # Each rank prints its reduced tensor (the two ranks' lines may interleave).
    assert "tensor([2., 2.], device='cuda:0')" in result.stderr and "tensor([2., 2.], device='cuda:1')" in result.stderr


def test_one_rank_asked_for_is_still_started_by_the_launcher():
    """`--nproc-per-node 1`, a DDP script on a one-GPU machine: it reads RANK and LOCAL_RANK,
    so it runs under torch's launcher as one rank, not as a plain process."""
    result = torchlint_run("train.py", "--nproc-per-node", "1", "--device", "fake-cuda", "--timeout", str(TIMEOUT),
                           "--output-format", "json", cwd=EXAMPLES / "nccl_ddp", timeout=TIMEOUT + 60)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert result.findings() == [] and result.report["outcome"]["optimizer_steps"] == 2
    assert result.report["outcome"]["world_size"] == 1
    assert "tensor([1., 1.], device='cuda:0')" in result.stderr


def test_ranks_that_all_wait_forever_are_stopped_at_the_timeout_with_each_ranks_line():
    result = run("all_ranks_wait", "")
    timeout = runtime_findings(result, "TL703")
    assert result.returncode == 1 and len(timeout) == 1, result.stdout + result.stderr[-3000:]
    assert timeout[0]["location"]["row"] == 12 and timeout[0]["message"].startswith("rank 0 timed out")
    evidence = timeout[0]["evidence"][0]["data"]
    assert "more" in evidence, (result.seconds, {k: v for k, v in evidence.items() if k != "output_tail"}, result.stderr[-2000:])
    assert "rank 1 was at train.py:12 `time.sleep(0.2)`" in evidence["more"]
    assert {rank: stack[-1][1] for rank, stack in evidence["ranks"].items()} == {"0": 12, "1": 12}
    assert result.seconds < WAIT_TIMEOUT + 15
