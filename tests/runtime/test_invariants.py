"""The invariants probe on the silent-training-error programs of benchmarks/silent_errors:
each buggy program is reported under its code at the line that shows it; each fixed twin
gets no runtime-only finding at all. One run per program, shared by the tests that read it,
two at a time."""

from __future__ import annotations

import functools

import pytest

pytest.importorskip("torch")

from conftest import ROOT, torchlint_run  # noqa: E402

pytestmark = pytest.mark.slow

PROGRAMS = ROOT / "benchmarks" / "silent_errors"

#: program -> (code, the line it is reported at, words its message must hold)
EXPECTED = {
    "outside_optimizer_frozen": ("TL744", 19, "2 parameters get gradients but no optimizer holds them"),
    "outside_optimizer_replaced_head": ("TL744", 27, "`Net.fc.bias`, `Net.fc.weight`"),
    "grads_never_cleared": ("TL745", 22, "nothing cleared them between the steps"),
    "zero_grad_wrong_optimizer": ("TL745", 19, "the gradients of step 1 were still in `.grad`"),
    "frozen_with_stale_grad": ("TL746", 20, "with `requires_grad=False` changed in optimizer step 4"),
    "train_after_eval": ("TL747", 25, "while it is in eval() mode: its Dropout layers"),
    "functional_dropout_eval": ("TL748", 16, "inside `Net`, which is in eval() mode"),
    "attention_dropout_eval": ("TL748", 16, "attention dropout (dropout_p=0.2) ran inside `Attention`, which is in eval() mode"),
    "rrelu_training_in_eval": ("TL748", 15, "(`rrelu`) ran inside `Net`, which is in eval() mode"),
    "spectral_norm_eval_first": ("TL749", 13, "before any training-mode forward"),
    "workers_share_rng": ("TL750", 28, "with `rng` (a numpy.random.Generator"),
    "workers_reseeded_alike": ("TL750", 31, "2 of the DataLoader's 2 workers start numpy's global generator"),
    "workers_reseeded_random": ("TL750", 33, "3 of the DataLoader's 3 workers start Python's `random` generator"),
    "reinit_after_load": ("TL751", 13, "`nn.init.xavier_uniform_` overwrote 2 parameters that `load_state_dict` at buggy.py:23 had loaded"),
    "lr_dropped_to_zero": ("TL752", 15, "got no gradient or no update at every step read from step 5"),
    "dying_relu": ("TL752", 16, "`Sequential.0.weight`"),
    "loss_plateau_sigmoids": ("TL753", 17, "the model's output is the same for every sample"),
    "autocast_wraps_only_loss": ("TL754", 13, "`linear` ran in float32"),
    "freeze_never_called": ("TL756", 37, "`args.freeze_encoder` is True"),
}
TWINS = ["outside_optimizer_frozen", "grads_never_cleared", "frozen_with_stale_grad", "train_after_eval",
         "workers_share_rng", "dying_relu", "gan_discriminator_not_cleared", "accumulation_never_cleared",
         "autocast_wraps_only_loss", "freeze_never_called", "functional_dropout_eval", "attention_dropout_eval",
         "rrelu_training_in_eval", "workers_reseeded_alike", "workers_reseeded_random"]


def _run(program: tuple[str, str]):
    folder, variant = program
    return torchlint_run(f"{variant}.py", "-q", "--output-format", "json", cwd=PROGRAMS / folder, timeout=180)


@functools.lru_cache(maxsize=None)
def _all_runs() -> dict:
    from concurrent.futures import ThreadPoolExecutor

    programs = [(name, "buggy") for name in EXPECTED] + [(name, "fixed") for name in TWINS]
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(programs, pool.map(_run, programs)))


@pytest.mark.parametrize("program", sorted(EXPECTED))
def test_the_buggy_program_is_reported_at_its_line(program):
    code, line, words = EXPECTED[program]
    result = _all_runs()[(program, "buggy")]
    found = [f for f in result.findings("runtime only") if f["code"] == code]
    assert found, result.stdout[-3000:]
    assert found[0]["location"]["row"] == line, found[0]
    assert words in found[0]["message"], found[0]["message"]


@pytest.mark.parametrize("program", TWINS)
def test_the_fixed_twin_has_no_runtime_finding(program):
    result = _all_runs()[(program, "fixed")]
    # No warning or error. An `info` finding is a measurement of this machine, not a bug: a
    # tiny model fed by forked workers waits for its batches (TL741) when the machine is busy.
    found = [f for f in result.findings("runtime only") if f["severity"] != "info"]
    assert found == [], result.stdout[-3000:]
    assert {f["code"] for f in result.findings("runtime only")} <= {"TL741"}
    assert result.report["outcome"]["status"] == "completed"


def test_an_optimizer_freed_before_the_run_ends_still_counts_for_what_it_held(write, tmp_path):
    """TL744 is judged after the program: by then a collection may have freed the optimizer
    (one in a reference cycle goes whenever the collector runs), and what it held must still
    count. Found when a fork-started run collected at another moment than a fresh one."""
    source = (PROGRAMS / "outside_optimizer_frozen" / "buggy.py").read_text()
    write("train.py", source + "del optimizer\nimport gc\ngc.collect()\n")
    result = torchlint_run("train.py", "-q", "--output-format", "json", cwd=tmp_path, timeout=180)
    found = [f for f in result.findings("runtime only") if f["code"] == "TL744"]
    assert [f["location"]["row"] for f in found] == [19], result.stdout[-3000:]
