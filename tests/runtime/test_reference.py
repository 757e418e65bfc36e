"""The reference probe: `torchlint run --save-reference` records a known-good run, and
`--reference` checks a run against it. One healthy training program records the reference;
runs of it with other seeds report nothing; variants of it, each with one bug a pull request
could bring, report the relation they break at the right line and step. The runs are shared
between tests (one per program and arguments, cached for the module)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

from conftest import torchlint_run  # noqa: E402

pytestmark = pytest.mark.slow

HEALTHY = textwrap.dedent('''
    import sys

    import torch
    from torch import nn

    torch.manual_seed(int(sys.argv[1]) if len(sys.argv) > 1 else 0)


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.frozen = nn.Linear(8, 16)
            self.body = nn.Linear(16, 16)
            self.drop = nn.Dropout(0.1)
            self.head = nn.Linear(16, 2)

        def forward(self, x):
            return self.head(self.drop(torch.relu(self.body(torch.relu(self.frozen(x))))))


    model = Net()
    for p in model.frozen.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.5)
    x_all = torch.randn(512, 8)
    y_all = (x_all[:, 0] + x_all[:, 1] > 0).long()
    x_val, y_val = torch.randn(64, 8), torch.randint(0, 2, (64,))

    for step in range(30):
        index = torch.randint(0, 512, (32,))
        x, y = x_all[index], y_all[index]
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        if step == 2:
            model.eval()
            with torch.no_grad():
                val_loss = nn.functional.cross_entropy(model(x_val), y_val)
            model.train()
''').lstrip()

#: name -> (text of HEALTHY, its replacement), ...: each variant is one bug.
AUTOCAST = '    with torch.autocast("cpu", dtype=torch.bfloat16):\n'
VARIANTS = {
    "no_zero_grad": [("    optimizer.zero_grad()\n", "")],
    "zero_grad_after_backward": [("    optimizer.zero_grad()\n", ""),
                                 ("    loss.backward()\n", "    loss.backward()\n    optimizer.zero_grad()\n")],
    "optimizer_over_a_subset": [("SGD(model.parameters()", "SGD(model.body.parameters()")],
    "eval_mode_after_evaluation": [("        model.train()\n", "")],
    "frozen_layer_trains_again": [("        model.train()\n", "        model.train()\n        model.requires_grad_(True)\n")],
    "clipping_removed": [("    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n", "")],
    "learning_rate_0_from_step_4": [
        ("    scheduler.step()\n", "    scheduler.step()\n    if step == 2:\n        optimizer.param_groups[0]['lr'] = 0.0\n"),
    ],
    "autocast_removed": [(AUTOCAST, "    if True:  # no autocast\n")],
    "dropout_typo": [("nn.Dropout(0.1)", "nn.Dropout(1.0)")],
}

OTHER_PROGRAM = textwrap.dedent('''
    import torch
    from torch import nn

    encoder = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))
    optimizer = torch.optim.Adam(encoder.parameters(), lr=1e-2)
    for _ in range(6):
        optimizer.zero_grad()
        encoder(torch.randn(8, 4)).pow(2).mean().backward()
        optimizer.step()
''').lstrip()


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("reference")
    (folder / "train.py").write_text(HEALTHY)
    for name, edits in VARIANTS.items():
        source = HEALTHY
        for old, new in edits:
            assert source.count(old) == 1, (name, old)
            source = source.replace(old, new)
        (folder / f"{name}.py").write_text(source)
    (folder / "other.py").write_text(OTHER_PROGRAM)
    return folder


_RUNS: dict[tuple, object] = {}


def run(folder: Path, script: str, *options: str, seed: str | None = None):
    """`torchlint run SCRIPT OPTIONS` in ``folder``, once per arguments for the module."""
    key = (str(folder), script, options, seed)
    if key not in _RUNS:
        extra = ("--", seed) if seed else ()
        _RUNS[key] = torchlint_run(script, "--device", "cpu", "-q", "--output-format", "json", *options, *extra,
                                   cwd=folder, timeout=180)
    return _RUNS[key]


@pytest.fixture(scope="module")
def reference(folder) -> Path:
    result = run(folder, "train.py", "--save-reference", "good.json")
    assert result.returncode == 0, result.stdout + result.stderr
    return folder / "good.json"


def checked(folder: Path, script: str, *options: str, seed: str | None = None):
    result = run(folder, script, "--reference", "good.json", *options, seed=seed)
    found = [f for f in result.findings("runtime only") if f["code"].startswith("TL76")]
    return found, result


def line_of(folder: Path | None, script: str, text: str) -> int:
    """The line of ``script`` (in ``folder``; HEALTHY without one) whose text is ``text``."""
    if folder is None:
        return next(number for number, line in enumerate(HEALTHY.splitlines(), 1) if line.strip() == text)
    lines = (folder / script).read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if line.strip() == text)


ZERO_GRAD = line_of(None, "train.py", "optimizer.zero_grad()")
CLIP = line_of(None, "train.py", "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)")


def test_a_healthy_run_records_a_reference(folder, reference):
    document = json.loads(reference.read_text())
    assert document["format"] == "torchlint-reference" and document["version"] == 1
    assert document["program"]["script"] == "train.py"
    # 30 steps: the first 8, then every 10th.
    assert [step["step"] for step in document["steps"]] == [1, 2, 3, 4, 5, 6, 7, 8, 10, 20, 30]
    assert document["parameters"] == ["Net.frozen.weight", "Net.frozen.bias", "Net.body.weight", "Net.body.bias",
                                      "Net.head.weight", "Net.head.bias"]
    second = document["steps"][1]
    assert [event[0] for event in second["events"]] == ["scheduler:StepLR", "zero_grad:0", "autocast:cpu/bfloat16", "backward",
                                                        "clip_grad_norm_", "step:0"]
    assert second["events"][4][1:] == ["train.py", line_of(folder, "train.py", "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)")]
    # frozen: held by the optimizer, no gradient, not moved; trained: a gradient and a change.
    assert second["params"][0] == ["0/0", False, None, None, "float32"]
    assert second["params"][4] == ["0/0", True, "nonzero", True, "float32"]
    summary = run(folder, "train.py", "--save-reference", "good.json").report["reference"]
    assert summary["saved"] == str(reference) and summary["recorded"] == 11


@pytest.mark.parametrize("seed", [None, "1", "7"])
def test_the_same_program_with_any_seed_breaks_nothing(folder, reference, seed):
    found, result = checked(folder, "train.py", seed=seed)
    assert found == [], [f["message"] for f in found]
    assert result.returncode == 0
    summary = result.report["reference"]
    assert summary["compared"] == 11 and summary["relations"] >= 40 and summary["broken"] == []


def only(found: list[dict]) -> dict:
    assert len(found) == 1, [f"{f['code']} {f['message']}" for f in found]
    return found[0]


def test_gradients_never_cleared(folder, reference):
    finding = only(checked(folder, "no_zero_grad.py")[0])
    assert finding["code"] == "TL760"
    assert finding["location"]["row"] == line_of(folder, "no_zero_grad.py", "optimizer.step()")
    assert finding["message"] == (
        f"in the reference, `zero_grad()` of optimizer 0 (SGD) was called at every step (at train.py:{ZERO_GRAD}); here step 2 "
        f"had none before `step()` of optimizer 0 (SGD) at no_zero_grad.py:{finding['location']['row']}")


def test_gradients_cleared_after_backward(folder, reference):
    found, _ = checked(folder, "zero_grad_after_backward.py")
    order = [f for f in found if f["code"] == "TL760"]
    script = "zero_grad_after_backward.py"
    moved, backward = line_of(folder, script, "optimizer.zero_grad()"), line_of(folder, script, "loss.backward()")
    assert len(order) == 1 and order[0]["location"]["row"] == moved
    assert order[0]["message"] == (
        "in the reference, `zero_grad()` of optimizer 0 (SGD) came before `autocast` (cpu, bfloat16), `backward()` at every "
        f"step; here at step 2 it is at {script}:{moved}, after `backward()` at {script}:{backward}")
    # zero_grad() there also leaves every trainable parameter without a gradient from step 1
    update = [f for f in found if f["code"] == "TL761"]
    assert len(update) == 1 and "4 parameters got a gradient at every step; here they got none at step 1" in update[0]["message"]


def test_an_optimizer_over_a_subset_of_the_parameters(folder, reference):
    finding = only(checked(folder, "optimizer_over_a_subset.py")[0])
    assert finding["code"] == "TL761"
    assert finding["location"]["row"] == line_of(folder, "optimizer_over_a_subset.py", "optimizer.step()")
    assert finding["message"] == (
        "in the reference, param group 0 of optimizer 0 (SGD) held 4 parameters at every step; here no optimizer holds them "
        "at step 1: `Net.frozen.bias`, `Net.frozen.weight`, `Net.head.bias`, `Net.head.weight`")


def test_training_in_eval_mode_after_an_evaluation(folder, reference):
    finding = only(checked(folder, "eval_mode_after_evaluation.py")[0])
    assert finding["code"] == "TL762"
    assert finding["location"]["row"] == line_of(folder, "eval_mode_after_evaluation.py",
                                                 "loss = nn.functional.cross_entropy(model(x), y)")
    assert finding["message"].startswith("in the reference, `Net` was in train mode at every training forward (grad enabled); "
                                         "here it is in eval mode at step 4")
    eval_line = line_of(folder, "eval_mode_after_evaluation.py", "model.eval()")
    assert finding["message"].endswith(f"the last switch was `Net.eval()` at eval_mode_after_evaluation.py:{eval_line}")


def test_a_frozen_layer_that_trains_again(folder, reference):
    finding = only(checked(folder, "frozen_layer_trains_again.py")[0])
    assert finding["code"] == "TL761"
    assert finding["location"]["row"] == line_of(folder, "frozen_layer_trains_again.py", "optimizer.step()")
    assert finding["message"] == (
        "in the reference, 2 parameters had `requires_grad=False` at every step; here they have `requires_grad=True` at "
        "step 4: `Net.frozen.bias`, `Net.frozen.weight`")


def test_gradient_clipping_removed(folder, reference):
    finding = only(checked(folder, "clipping_removed.py")[0])
    assert finding["code"] == "TL760"
    assert finding["location"]["row"] == line_of(folder, "clipping_removed.py", "optimizer.step()")
    assert finding["message"].startswith(f"in the reference, `clip_grad_norm_()` was called at every step (at train.py:{CLIP}); "
                                         "here step 2 had none before `step()`")


def test_a_learning_rate_of_0_from_step_4_is_one_finding(folder, reference):
    # Not also "6 parameters did not change": the learning rate says why.
    finding = only(checked(folder, "learning_rate_0_from_step_4.py")[0])
    assert finding["code"] == "TL761"
    assert finding["location"]["row"] == line_of(folder, "learning_rate_0_from_step_4.py", "optimizer.step()")
    assert finding["message"] == (
        "in the reference, the learning rate of param group 0 of optimizer 0 (SGD) was above 0 at every step (0.1 at this "
        "step); here it is 0 at step 4: the step changes none of its parameters")
    assert finding["evidence"][0]["data"]["step"] == 4


def test_an_activation_that_became_all_zero(folder, reference):
    found, _ = checked(folder, "dropout_typo.py")
    by_code = {f["code"]: f for f in found}
    # Net.drop zeroes everything: named there (not Net.head after it, whose output is its bias),
    # and the layers before it get all-zero gradients.
    assert sorted(by_code) == ["TL761", "TL767"], [f["message"] for f in found]
    assert by_code["TL767"]["location"]["row"] == line_of(folder, "dropout_typo.py", "loss = nn.functional.cross_entropy(model(x), y)")
    assert by_code["TL767"]["message"] == ("in the reference, the output of `Net.drop` was finite and not all zero at every "
                                           "training forward; here it is all zero at step 1")
    assert "got a non-zero gradient at every step; here they got an all-zero one at step 1" in by_code["TL761"]["message"]


def test_a_run_cut_short_compares_the_steps_it_made(folder, reference):
    found, result = checked(folder, "eval_mode_after_evaluation.py", "--steps", "5")
    assert [f["code"] for f in found] == ["TL762"]
    assert result.report["reference"]["compared"] == 5


def test_a_missing_reference_is_a_usage_error(folder):
    result = torchlint_run("train.py", "--reference", "nowhere.json", cwd=folder, timeout=60)
    assert result.returncode == 2
    assert "nowhere.json: no such file (record one with `torchlint run TARGET --save-reference nowhere.json`)" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_file_that_is_not_json_is_a_usage_error(folder):
    (folder / "notes.json").write_text("step 1: fine\n")
    result = torchlint_run("train.py", "--reference", "notes.json", cwd=folder, timeout=60)
    assert result.returncode == 2
    assert "notes.json: not a JSON file" in result.stderr and "Traceback" not in result.stderr
    (folder / "other.json").write_text('{"findings": []}')
    result = torchlint_run("train.py", "--reference", "other.json", cwd=folder, timeout=60)
    assert result.returncode == 2 and "JSON, but not a torchlint reference" in result.stderr


def test_a_reference_of_another_program_says_so(folder, reference):
    found, result = checked(folder, "other.py")
    finding = only(found)
    assert finding["code"] == "TL766" and finding["severity"] == "error"
    assert finding["message"].startswith("the reference ")
    assert "was recorded from train.py and none of its 6 parameters (`Net.body.bias`" in finding["message"]
    assert "exists here with the same shape (this run's: `Sequential.0.bias`" in finding["message"]
    assert "nothing was compared" in finding["message"]
    assert result.returncode == 1


def test_a_reference_of_another_program_with_the_same_layer_names_says_so(folder):
    """Two programs that both train an `nn.Sequential` share `Sequential.0.weight`: the shapes
    tell them apart (only `Sequential.2.bias`, one of four, matches)."""
    recorded = run(folder, "other.py", "--save-reference", "other.json")
    assert recorded.returncode == 0, recorded.stderr
    (folder / "wider.py").write_text(OTHER_PROGRAM.replace("nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1)",
                                                           "nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)"))
    result = run(folder, "wider.py", "--reference", "other.json")
    finding = only([f for f in result.findings("runtime only") if f["code"].startswith("TL76")])
    assert finding["code"] == "TL766"
    assert "was recorded from other.py and only 1 of its 4 parameters" in finding["message"]


def test_a_new_layer_is_one_difference_not_a_flood(folder, reference):
    source = HEALTHY.replace("        self.head = nn.Linear(16, 2)\n",
                             "        self.head = nn.Linear(16, 2)\n        self.extra = nn.Linear(2, 2)\n")
    source = source.replace("return self.head(", "return self.extra(self.head(").replace("(x))))))", "(x)))))))")
    (folder / "new_layer.py").write_text(source)
    found, _ = checked(folder, "new_layer.py")
    finding = only(found)
    assert finding["code"] == "TL765" and finding["severity"] == "warning"
    assert finding["message"] == ("the model differs from the reference's: parameters 2 new (`Net.extra.bias`, "
                                  "`Net.extra.weight`); relations of those parameters are not compared")


def test_autocast_removed(folder, reference):
    found, _ = checked(folder, "autocast_removed.py")
    by_code = {f["code"]: f for f in found}
    assert sorted(by_code) == ["TL760", "TL763"], [f["message"] for f in found]
    assert by_code["TL763"]["location"]["row"] == line_of(folder, "autocast_removed.py", "loss = nn.functional.cross_entropy(model(x), y)")
    assert by_code["TL763"]["message"] == ("in the reference, the output of `Net` was bfloat16 at every training forward; here it "
                                           "is float32 at step 1")
    assert by_code["TL760"]["message"].startswith("in the reference, `autocast` (cpu, bfloat16) was entered at every step (at "
                                                  f"train.py:{line_of(None, 'train.py', AUTOCAST.strip())})")


# -- the relations alone, on made-up records (no run) ----------------------------------------------

def record(step: int, loss, lr: float = 0.1, grad: str = "nonzero", changed: bool = True) -> dict:
    return {"step": step, "optimizer": "0", "site": ["train.py", 9], "lr": [lr], "loss": loss, "forward": {},
            "events": [["zero_grad:0", "train.py", 6], ["backward", "train.py", 8], ["step:0", "train.py", 9]],
            "rows": {"Net.fc.weight": ["0/0", True, grad, changed, "float32"]}}


def relations_of(records: list[dict]):
    from torchlint.plugins.probes.reference.relations import Relations

    return Relations({"records": records, "optimizers": {"0": "SGD"}, "modules": {}})


FALLING = [1.0, 0.95, 0.9, 0.8, 0.7, 0.65, 0.6, 0.55]


def test_a_loss_that_stops_falling_where_the_reference_fell_is_reported():
    from torchlint.plugins.probes.reference.relations import loss_trend

    relations = relations_of([record(i + 1, loss) for i, loss in enumerate(FALLING)])
    flat = [record(i + 1, loss) for i, loss in enumerate([1.0, 1.02, 0.98, 1.01, 0.99, 1.0, 1.03, 1.0])]
    found = loss_trend(relations, flat)
    assert found is not None and found.code == "TL764" and found.site == ["train.py", 8]
    assert found.message == ("in the reference, the loss fell by 37% over the 8 steps compared (0.95 to 0.6); here it did not "
                             "fall at all (1 to 1, up to step 8)")
    # Falling more slowly, from another start (a new seed, a new torch): no finding.
    slower = [record(i + 1, loss) for i, loss in enumerate([2.0, 2.1, 1.9, 1.9, 1.85, 1.88, 1.8, 1.87])]
    assert loss_trend(relations, slower) is None
    # A reference that barely fell (under 20 %) says nothing about a flat run.
    barely = relations_of([record(i + 1, 1.0 - 0.01 * i) for i in range(8)])
    assert loss_trend(barely, flat) is None
    # Too few steps in common to have two ends of three: no judgement.
    assert loss_trend(relations, flat[:5]) is None


def test_a_non_finite_loss_breaks_the_finite_loss_relation_once():
    relations = relations_of([record(i + 1, loss) for i, loss in enumerate(FALLING)])
    reported: set = set()
    found = relations.check(record(5, "nan"), {}, reported)
    assert [(f.code, f.site) for f in found] == [("TL764", ["train.py", 8])]
    assert found[0].message == "in the reference, the loss was finite at every step; here it is nan at step 5"
    assert relations.check(record(6, "inf"), {}, reported) == []  # reported at the step it first broke


def test_fewer_than_three_reference_steps_make_no_relation():
    relations = relations_of([record(1, 1.0), record(2, 0.9)])
    assert relations.count() == 0
    assert relations.check(record(2, "nan", lr=0.0, grad=None, changed=False), {}, set()) == []


def test_steps_after_the_reference_ended_are_not_compared():
    # A schedule that decays to 0 at the end of a longer run is no broken relation.
    relations = relations_of([record(i + 1, loss) for i, loss in enumerate(FALLING)])
    assert relations.check(record(9, 0.5, lr=0.0, changed=False), {}, set()) == []
    found = relations.check(record(8, 0.5, lr=0.0, changed=False), {}, set())
    assert [f.data["relation"] for f in found] == ["lr > 0"]  # not also "did not change": the rate says why


def test_a_compiled_or_data_parallel_model_keeps_its_parameter_names():
    """A pull request that adds `torch.compile` (or DataParallel) is still compared with the
    reference: parameters are named through the model inside the wrapper."""
    import torch
    from torch import nn

    from torchlint.plugins.probes.reference.facts import _unwrapped

    model = nn.Linear(2, 2)
    assert _unwrapped(torch.compile(model, backend="eager")) is model
    assert _unwrapped(nn.DataParallel(model)) is model
    assert _unwrapped(model) is model


BREAK_RECORDER = '''
from torchlint import hookimpl


@hookimpl
def torchlint_probes():
    from torchlint.plugins.probes.reference.facts import Recorder

    def broken(*args, **kwargs):
        raise ValueError("a bug in the probe")

    Recorder._before_step = broken
    return []
'''


def test_a_bug_in_the_recorder_switches_the_probe_off_not_the_program(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nplugins = ["break_probe"]\n')
    (tmp_path / "break_probe.py").write_text(BREAK_RECORDER)
    (tmp_path / "train.py").write_text(HEALTHY)
    result = torchlint_run("train.py", "-q", "--output-format", "json", "--save-reference", "good.json", "--steps", "3",
                           cwd=tmp_path, timeout=180)
    assert result.report["outcome"]["status"] == "steps-reached", result.stderr[-3000:]
    (crash,) = result.findings("runtime only")
    assert crash["code"] == "TL707"
    assert "probe 'reference' raised ValueError: a bug in the probe" in crash["message"]
    assert not (tmp_path / "good.json").exists()
    assert result.report["reference"]["not_saved"] == "the probe was switched off by its own error (TL707)"
