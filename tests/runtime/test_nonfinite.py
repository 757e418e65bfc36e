"""The non-finite probe: the first operation that made NaN/Inf out of finite values, forward
(TL735) and in backward (TL736), named at the user's line; values written on purpose are not
reported. One run per program, shared by its tests."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from conftest import EXAMPLES, ROOT, torchlint_run  # noqa: E402

FOLDER = EXAMPLES / "nonfinite"


def run(path, *extra: str, cwd=ROOT):
    return torchlint_run(str(path), "-q", "--output-format", "json", *extra, cwd=cwd, timeout=180)


def only(result, code: str) -> dict:
    found = [f for f in result.findings() if f["code"] == code]
    assert len(found) == 1, result.stdout + result.stderr[-2000:]
    return found[0]


# -- the bundled examples -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def buggy_bce():
    return run(FOLDER / "buggy" / "train.py")


@pytest.mark.slow
def test_a_log_of_exact_zeros_is_named_at_its_line(buggy_bce):
    finding = only(buggy_bce, "TL735")
    assert finding["filename"] == "examples/runtime/nonfinite/buggy/train.py"
    assert finding["location"]["row"] == 20  # the hand-written BCE, not the backward() line
    message = finding["message"]
    assert message.startswith("`log` at train.py:20 made -inf")
    assert "exactly 0" in message and "log of 0 is -inf" in message
    assert "the loss passed to `backward()` at train.py:22 (step 1)" in message
    assert {f["code"] for f in buggy_bce.findings()} == {"TL735"}  # found once, not at every NaN step after


@pytest.mark.slow
def test_the_published_summary_says_what_was_checked(buggy_bce):
    summary = buggy_bce.report["nonfinite"]
    assert summary["checked"] == {"model outputs": 4, "losses": 4, "backward passes": 4}
    assert summary["found"] == [{"code": "TL735", "op": "log", "when": "step 1", "at": [str(FOLDER / "buggy" / "train.py"), 20]}]


@pytest.fixture(scope="module")
def buggy_distance():
    return run(FOLDER / "buggy" / "pairwise_distance.py")


@pytest.mark.slow
def test_a_nan_gradient_is_named_at_the_forward_line(buggy_distance):
    finding = only(buggy_distance, "TL736")
    assert finding["location"]["row"] == 20  # the sqrt in forward, not backward() at 24
    message = finding["message"]
    assert message.startswith("the derivative of `sqrt` at pairwise_distance.py:20 is NaN/Inf")
    assert "24 exactly 0" in message  # the diagonal: each sample against itself
    assert "`backward()` at pairwise_distance.py:24 of a finite loss made the gradients of 4 parameters" in message
    assert "TL735" not in {f["code"] for f in buggy_distance.findings()}  # forward was finite


@pytest.mark.slow
@pytest.mark.parametrize("script", ["train.py", "pairwise_distance.py", "masked_attention.py"])
def test_the_fixed_programs_are_silent(script):
    result = run(FOLDER / "fixed" / script)
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    assert result.findings() == []
    summary = result.report["nonfinite"]
    assert summary["found"] == [] and summary["checked"]["losses"] >= 2
    if script == "masked_attention.py":
        # The all-padding batch made NaN in the model's output: judged (one replay) and
        # found to come from the -inf masks, then skipped by the program itself.
        assert summary["replays"] == 1


@pytest.mark.slow
def test_disable_probe_silences_it():
    result = run(FOLDER / "buggy" / "train.py", "--disable-probe", "nonfinite")
    assert result.findings() == []
    assert "nonfinite" not in result.report


CUDA_MODEL = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x) + torch.zeros(x.shape[0], 4, device=x.device)
        return h / h.sum(dim=1, keepdim=True).clamp(max=0)


device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
model = Net().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 4, device=device)
for step in range(2):
    loss = model(x).mean()
    print(loss.item())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


@pytest.mark.slow
def test_under_fake_cuda_a_replay_runs_on_the_simulated_gpu_and_adds_no_host_sync(write, tmp_path):
    write("gpu.py", CUDA_MODEL)
    result = run("gpu.py", "--device", "fake-cuda", cwd=tmp_path)
    finding = only(result, "TL735")
    assert finding["location"]["row"] == 12  # inside forward, found by replaying the call
    assert "the divisor (8 values in [" in finding["message"] and "2 exactly 0" in finding["message"]
    # The program's own `loss.item()` per step, none of the probe's reads or of its replay.
    assert result.report["outcome"]["host_syncs"]["by_op"] == {"item": 2}


# -- inside a model: the call is replayed --------------------------------------------------------
MODEL_LOG = """
import torch
import torch.nn.functional as F
from torch import nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        logits = self.fc(x) * 200
        return torch.log(F.softmax(logits, dim=-1))


torch.manual_seed(0)
model = Policy()
x = torch.randn(8, 4)
log_probs = model(x)
loss = -log_probs.min()
loss.backward()
"""


@pytest.mark.slow
def test_an_op_inside_a_model_confirms_the_static_finding(write, tmp_path):
    write("policy.py", MODEL_LOG)
    result = run("policy.py", cwd=tmp_path)
    confirmed = result.findings("confirmed")
    assert [f["code"] for f in confirmed] == ["TL107"], result.stdout
    assert confirmed[0]["location"]["row"] == 13
    evidence = confirmed[0]["evidence"][0]["detail"]
    assert evidence.startswith("`log` at policy.py:13 made -inf")
    assert "they reached the loss passed to `backward()` at policy.py:21" in evidence
    assert [f for f in result.findings() if f["code"] == "TL735"] == []  # confirmed, not reported twice


MODEL_SQRT = """
import torch
from torch import nn


class NormPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6, bias=False)
        self.head = nn.Linear(6, 1)

    def forward(self, tokens):
        h = self.proj(tokens)
        lengths = torch.sqrt((h * h).sum(-1))
        return self.head(h.mean(1)) + lengths.mean(1, keepdim=True)


torch.manual_seed(0)
model = NormPool()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
tokens = torch.randn(4, 5, 6)
tokens[:, 3:] = 0.0  # padding
for step in range(2):
    loss = model(tokens).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


@pytest.mark.slow
def test_a_nan_gradient_inside_a_model_is_named_at_its_forward_line(write, tmp_path):
    write("pool.py", MODEL_SQRT)
    result = run("pool.py", cwd=tmp_path)
    finding = only(result, "TL736")
    assert finding["location"]["row"] == 13
    assert finding["message"].startswith("the derivative of `sqrt` at pool.py:13 is NaN/Inf")
    assert "the gradient of 1 parameter (`NormPool.proj.weight`)" in finding["message"]


GRAD_SCALER = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 126)  # overflows until it backs off
x = torch.randn(32, 16) * 100
for step in range(3):
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
"""


@pytest.mark.slow
def test_an_overflow_grad_scaler_skips_is_not_reported(write, tmp_path):
    write("scaled.py", GRAD_SCALER)
    result = run("scaled.py", cwd=tmp_path)
    assert result.findings() == [], result.stdout
    assert result.report["outcome"]["optimizer_steps"] == 0  # every step was skipped: the overflow was real


RAISING_FORWARD = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 2)
try:
    model(torch.randn(3, 5))  # the wrong width: forward raises, the program goes on
except RuntimeError:
    pass
out = model(torch.randn(3, 4))
loss = out.sum() + torch.log(out.abs().min() * 0)  # log(0)
loss.backward()
"""


@pytest.mark.slow
def test_a_forward_that_raised_leaves_the_probe_watching(write, tmp_path):
    write("retry.py", RAISING_FORWARD)
    result = run("retry.py", cwd=tmp_path)
    assert "always_call" not in result.stderr  # torch calls the hook without kwargs then
    assert only(result, "TL735")["location"]["row"] == 11


INFERENCE_MODE = """
import torch
from torch import nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 3)

    def forward(self, x):
        return torch.log(torch.relu(self.body(x)))  # -inf wherever relu is 0


torch.manual_seed(0)
model = Scorer()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(2):
    loss = model.body(torch.randn(8, 4)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


@torch.inference_mode()
def evaluate():
    scores = model(torch.randn(8, 4))
    scores.nan_to_num_(0.0, 0.0, 0.0)
    return scores.mean().item()


print("score", evaluate())
"""


@pytest.mark.slow
def test_inference_tensors_are_watched_without_reading_their_version(write, tmp_path):
    # An inference tensor has no version counter: reading `_version` raises, and the probe's
    # module hook raised it into the program (makemore's `@torch.inference_mode()` evaluate).
    write("scorer.py", INFERENCE_MODE)
    result = run("scorer.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    assert "version counter" not in result.stdout + result.stderr
    assert {f["code"] for f in result.findings()} <= {"TL107"}, result.stdout  # no TL702, no TL707
    assert result.report["nonfinite"]["checked"]["model outputs"] >= 1


def test_an_inference_tensor_counts_as_changed_since_it_was_recorded():
    from torchlint.plugins.probes.nonfinite.values import UNTRACKED, version_of

    with torch.inference_mode():
        made = torch.ones(2)
    assert version_of(made) is UNTRACKED and version_of(torch.ones(2)) == 0
    assert version_of(made) != version_of(made) and not (UNTRACKED == UNTRACKED)
    assert 0 != UNTRACKED and not (UNTRACKED == 0)


#: The same model, its projection initialised by `orthogonal_`, which writes the weight through
#: a view made under no_grad.
ORTHOGONAL_INIT = MODEL_SQRT.replace(
    "        self.head = nn.Linear(6, 1)\n",
    "        self.head = nn.Linear(6, 1)\n        nn.init.orthogonal_(self.proj.weight)\n", 1)


@pytest.mark.slow
def test_a_no_grad_view_from_the_weights_init_does_not_switch_the_probe_off(write, tmp_path):
    # `orthogonal_` leaves a no_grad view of the weight, edited in place, in the records the
    # first backward looks through; torch refuses its `grad_fn`/`is_leaf` (pytorch/examples'
    # super_resolution: TL707, and no NaN gradient traced after it).
    write("pool.py", ORTHOGONAL_INIT)
    result = run("pool.py", cwd=tmp_path)
    assert "TL707" not in {f["code"] for f in result.findings()}, result.stdout
    finding = only(result, "TL736")
    assert finding["location"]["row"] == 14
    assert finding["message"].startswith("the derivative of `sqrt` at pool.py:14 is NaN/Inf")


def test_grad_fn_of_a_refused_view_is_none():
    from torchlint.plugins.probes.nonfinite.values import grad_fn_of, is_grad_leaf

    weight = torch.nn.Parameter(torch.randn(3, 3))
    with torch.no_grad():
        view = weight.view(-1)
        view.copy_(torch.zeros(9))
    with pytest.raises(RuntimeError):
        view.grad_fn
    assert grad_fn_of(view) is None and not is_grad_leaf(view) and is_grad_leaf(weight)
    assert grad_fn_of(weight * 2) is not None


# -- the pieces, without a run ------------------------------------------------------------------
def test_judge_tells_deliberate_values_from_culprits():
    from torchlint.plugins.probes.nonfinite.values import Culprit, Deliberate, Outside, judge

    zeros = torch.tensor([0.0, 0.5, 1.0], requires_grad=True)
    out = torch.log(zeros.detach())
    found = judge("log", [zeros], [], [out], None)
    assert isinstance(found, Culprit) and found.kind == "TL107"
    assert found.inputs == ["its input (3 values in [0, 1]; 1 exactly 0)"] and found.output == "-inf at 1 of 3 values"
    mask = torch.tensor([0.0, 1.0, 1.0])
    assert isinstance(judge("log", [mask], [], [torch.log(mask)], None), Deliberate)  # log of a 0/1 mask
    scores = torch.zeros(3)
    filled = scores.masked_fill(torch.tensor([True, False, False]), float("-inf"))
    assert isinstance(judge("masked_fill", [scores], [float("-inf")], [filled], None), Deliberate)
    half = torch.tensor([torch.finfo(torch.float16).min, 0.0], dtype=torch.float16)
    assert isinstance(judge("sub", [half], [100.0], [half - 100.0], None), Deliberate)
    assert isinstance(judge("empty", [], [], [torch.full((2,), float("nan"))], None), Outside)
    division = judge("div", [torch.ones(2), torch.tensor([0.0, 2.0])], [], [torch.tensor([float("inf"), 0.5])], None)
    assert division.inputs[1] == "the divisor (2 values in [0, 2]; 1 exactly 0)"


def test_node_names_become_op_names():
    from torchlint.plugins.probes.nonfinite.values import node_op

    assert node_op("SqrtBackward0") == "sqrt"
    assert node_op("LinalgVectorNormBackward0") == "linalg_vector_norm"
    assert node_op("PowBackward1") == "pow"


def test_the_terminal_section_appears_only_with_a_finding(tmp_path):
    from torchlint.plugins.probes.nonfinite.section import section

    quiet = {"checked": {"model outputs": 3, "losses": 3, "backward passes": 3}, "replays": 0, "found": [],
             "values_computed": True}
    assert section(quiet, tmp_path).text == ()
    assert section(quiet, tmp_path).cards == (("non-finite", "none", "first NaN/Inf by operation"),)
    found = dict(quiet, replays=1, found=[{"code": "TL735", "op": "log", "when": "step 2", "at": [str(tmp_path / "t.py"), 9]}])
    assert section(found, tmp_path).text == [
        "non-finite values: checked 3 model outputs, 3 losses, 3 backward passes; 1 model call replayed",
        "  TL735 forward: `log` at t.py:9, step 2",
    ]
