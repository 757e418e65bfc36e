"""The gradient-flow probe: silent training bugs read at the first optimizer steps, reported
at the user's line with the parameters named by their path in the model. One run per
bundled example (examples/runtime/gradient_flow), on the CPU."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from conftest import EXAMPLES, ROOT, torchlint_run  # noqa: E402

pytestmark = pytest.mark.slow

FOLDER = EXAMPLES / "gradient_flow"


def run(script: str):
    result = torchlint_run(str(FOLDER / script), "--device", "cpu", "-q", "--output-format", "json", cwd=ROOT, timeout=180)
    return {f["code"]: f for f in result.findings("runtime only")}, result


def test_a_layer_never_used_in_forward_is_named():
    found, result = run("buggy/unused_layer.py")
    assert set(found) == {"TL730"}
    finding = found["TL730"]
    assert finding["location"]["row"] == 27  # the line that steps
    assert "`Net.aux_head.bias`, `Net.aux_head.weight`" in finding["message"]
    assert "Net.head" not in finding["message"] and "Net.body" not in finding["message"]
    assert result.report["outcome"]["status"] == "completed"


def test_zero_grad_between_backward_and_step_starves_every_parameter():
    found, _ = run("buggy/zero_grad_order.py")
    assert set(found) == {"TL730", "TL732"}
    assert found["TL730"]["message"].startswith("4 parameters the optimizer updates got no gradient at each of the first 3 steps")
    assert found["TL732"]["location"]["row"] == 13  # the backward() line
    assert "the loss is exactly 0.685161" in found["TL732"]["message"]


def test_a_zero_learning_rate_leaves_parameters_unchanged():
    found, _ = run("buggy/zero_learning_rate.py")
    assert set(found) == {"TL731", "TL732"}
    assert found["TL731"]["location"]["row"] == 17
    assert "4 parameters had a gradient but kept their values through the first 3 steps" in found["TL731"]["message"]


def test_the_fixed_program_is_silent():
    found, result = run("fixed/train.py")
    assert found == {}
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_gradient_that_vanishes_through_stacked_sigmoids_names_the_starved_layers():
    found, _ = run("buggy/deep_sigmoid.py")
    # The first layers' weights do not move either, but TL742 says why: no TL731 beside it.
    # Twelve sigmoids also squeeze every sample to one output: TL753, the symptom at the loss.
    assert set(found) == {"TL742", "TL753"}
    finding = found["TL742"]
    assert finding["location"]["row"] == 19  # the line that steps
    assert "the gradient vanishes before it reaches 6 layers" in finding["message"]
    assert "what `Sequential.24` gets" in finding["message"]
    assert list(finding["evidence"][0]["data"]["layers"])[:2] == ["Sequential.0", "Sequential.2"]


def test_a_gradient_norm_that_grows_tenfold_each_step_is_an_explosion():
    found, _ = run("buggy/raw_features.py")
    assert set(found) == {"TL743"}
    norms = found["TL743"]["evidence"][0]["data"]["gradient_norms"]
    assert len(norms) == 3 and all(after >= 10 * before for before, after in zip(norms, norms[1:]))


@pytest.mark.parametrize("script", ["fixed/deep_normalised.py", "fixed/normalised_features.py"])
def test_normalised_twins_are_silent(script):
    found, result = run(script)
    assert found == {} and result.returncode == 0


PINNED = """
import gc
import weakref

import torch
from torch import nn


def train():
    torch.manual_seed(0)
    model = nn.Linear(8, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    first = None
    for step in range(4):
        logits = model(torch.randn(16, 8))
        loss = logits.pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if first is None:
            first = weakref.ref(logits)  # step 1's output: gone once `logits` is rebound
    gc.collect()
    print("step-1 logits alive:", first() is not None)


train()
"""


def test_naming_the_parameters_keeps_no_local_of_the_training_function_alive(tmp_path):
    # Before Python 3.13, reading `frame.f_locals` (to find the models in the user's frames)
    # leaves a snapshot of every local on the frame until the function returns: step 1's
    # batch, outputs and loss outlived their step, all run long (a GPU program's logits).
    (tmp_path / "train.py").write_text(PINNED)
    result = torchlint_run("train.py", "--device", "cpu", "--output-format", "json", cwd=tmp_path, timeout=180)
    assert "step-1 logits alive: False" in result.stderr + result.stdout, result.stdout + result.stderr[-2000:]


def test_frame_locals_copies_and_leaves_no_snapshot_behind():
    import sys
    import weakref

    import torch

    from torchlint.runtime.frames import frame_locals

    def holder():
        value = torch.ones(3)
        ref = weakref.ref(value)
        seen = frame_locals(sys._getframe())
        found = seen["value"] is value
        del seen
        value = None
        return ref, found, locals()["value"]

    ref, found, later = holder()
    assert found and ref() is None and later is None
    # A module's frame: its f_locals is its namespace, left whole.
    namespace = {"frame_locals": frame_locals, "sys": sys}
    exec("kept = 1\nseen = frame_locals(sys._getframe())", namespace)
    assert namespace["kept"] == 1 and namespace["seen"]["kept"] == 1


def test_frame_locals_leaves_the_dict_a_program_holds_from_locals_whole():
    """`hparams = locals()` is the frame's cached dict itself: emptying it would change what
    the program reads back."""
    import sys

    from torchlint.runtime.frames import frame_locals

    def train(lr=0.1, epochs=3):
        hparams = locals()
        seen = frame_locals(sys._getframe())
        return hparams, seen

    hparams, seen = train()
    assert hparams["lr"] == 0.1 and hparams["epochs"] == 3
    assert seen["lr"] == 0.1 and seen["hparams"] is hparams


LBFGS = """
import torch
from torch import nn

model = nn.ModuleDict({"used": nn.Linear(3, 1), "unused": nn.Linear(3, 1)})
optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5)
x, y = torch.randn(16, 3), torch.randn(16, 1)


def closure():
    optimizer.zero_grad()
    loss = (model["used"](x) - y).pow(2).mean()
    loss.backward()
    return loss


for step in range(3):
    optimizer.step(closure)
"""


@pytest.mark.parametrize("steps", ["1", "3"])
def test_a_closure_step_is_read_after_the_gradients_it_makes(tmp_path, steps):
    """LBFGS makes its gradients inside step(closure): read before it, even the used layer had
    none at the first step."""
    (tmp_path / "train.py").write_text(LBFGS.lstrip("\n"))
    result = torchlint_run("train.py", "--steps", steps, "-q", "--output-format", "json", cwd=tmp_path, timeout=180)
    found = [f for f in result.findings("runtime only") if f["code"] == "TL730"]
    assert len(found) == 1, result.stdout
    assert "unused.weight" in found[0]["message"] and "used.weight" not in found[0]["message"].replace("unused.weight", "")
