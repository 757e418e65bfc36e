"""The broadcast probe: an [N] against an [N, 1] broadcast to [N, N] and then reduced (TL739),
and losses torch runs silently on a target that does not fit (TL740). The bundled example
(examples/runtime/broadcast) and one program of cases, each a line marked `# case: NAME`,
that must or must not be reported; one run each, on the CPU."""

from __future__ import annotations

import textwrap

import pytest

pytest.importorskip("torch")

from conftest import EXAMPLES, ROOT, torchlint_run  # noqa: E402

pytestmark = pytest.mark.slow

FOLDER = EXAMPLES / "broadcast"

CASES = textwrap.dedent(
    """
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    n = 8
    pred = torch.randn(n, 1)                      # a one-unit head
    y = torch.randn(n)                            # the batch's targets
    x = torch.randn(n, 4)
    a, b = torch.randn(n), torch.randn(n)

    # Reported: hand-written losses and metrics of a prediction against a target.
    l1 = (pred - y).abs().sum()  # case: abs-sum
    scaled = 2.0 * (y - pred)  # case: reduced-later
    total = scaled.pow(2).float().mean()
    y_column = y.view(-1, 1)  # reshaped for some other loss, on a line of its own
    flat = pred.squeeze(-1)
    mse = ((flat - y_column) ** 2).mean()  # case: reshaped-earlier
    hits = ((pred > 0) == (y > 0)).sum() / n  # case: accuracy
    fed = F.mse_loss(pred - y, torch.zeros(n, n))  # case: into-a-loss

    # Not reported: pairwise matrices on purpose, and matrices never reduced.
    pairwise = (x[:, None, :] - x[None, :, :]).pow(2).sum(-1).mean()  # case: pairwise-same-tensor
    outer = (a.unsqueeze(1) * b).sum()  # case: unsqueeze-on-the-line
    gram = (a[:, None] * b[None, :]).sum()  # case: none-index-both
    rows = a.unsqueeze(1)
    cols = b.unsqueeze(0)
    mask = (rows < cols).float().mean()  # case: outer-over-lines
    self_gap = (a.unsqueeze(1) - a).abs().mean()  # case: one-tensor
    kept = pred - y  # case: never-reduced
    same_shape = ((flat - y) ** 2).mean()  # case: same-shape
    scalar = (pred - 1.0).mean()  # case: scalar

    # TL740: losses that broadcast silently, and cross-entropy targets that are no probabilities.
    counts = torch.poisson(torch.ones(n))
    poisson = nn.PoissonNLLLoss()(pred, counts)  # case: poisson
    hinge = F.hinge_embedding_loss(pred, torch.ones(n))  # case: hinge
    logits = torch.randn(n, 3)
    multi_hot = torch.tensor([[1.0, 1.0, 0.0]] * n)
    ce_multi = F.cross_entropy(logits, multi_hot)  # case: multi-hot
    ce_scores = F.cross_entropy(logits, torch.rand(n, 3) * 5)  # case: scores
    one_hot = F.one_hot(torch.randint(0, 3, (n,)), 3).float()
    ce_one_hot = F.cross_entropy(logits, one_hot)  # case: one-hot
    ce_smooth = F.cross_entropy(logits, 0.9 * one_hot + 0.1 / 3)  # case: smoothed
    ce_masked = F.cross_entropy(logits, one_hot * (torch.arange(n) % 2 == 0).float()[:, None])  # case: masked-rows
    prior = F.kl_div(logits.log_softmax(1), torch.full((3,), 1 / 3), reduction="batchmean")  # case: kl-prior
    warned = F.mse_loss(pred, y)  # case: warned-by-torch
    """
)


def lines(source: str) -> dict[str, int]:
    return {line.split("# case: ")[1].strip(): number for number, line in enumerate(source.splitlines(), 1) if "# case: " in line}


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    folder = tmp_path_factory.mktemp("broadcast")
    (folder / "cases.py").write_text(CASES)
    result = torchlint_run("cases.py", "-q", "--output-format", "json", cwd=folder, timeout=180)
    assert result.report["outcome"]["status"] == "completed", result.stdout + result.stderr
    found: dict[tuple[str, int], dict] = {}
    for finding in result.findings("runtime only"):
        found[(finding["code"], finding["location"]["row"])] = finding
    return found, lines(CASES)


@pytest.fixture(scope="module")
def buggy():
    result = torchlint_run(str(FOLDER / "buggy" / "train.py"), "-q", "--output-format", "json", cwd=ROOT, timeout=180)
    return result.findings("runtime only")


def test_the_example_loss_and_accuracy_are_reported_at_their_lines(buggy):
    by_line = {f["location"]["row"]: f for f in buggy if f["code"] == "TL739"}
    assert set(by_line) == {21, 30}, buggy
    loss, accuracy = by_line[21], by_line[30]
    assert loss["message"].startswith("`sub` broadcast a tensor of shape [64, 1] against one of shape [64] into [64, 64]")
    assert "`mean` at train.py:21 reduced it" in loss["message"]
    assert "`eq` broadcast" in accuracy["message"] and "`sum` at train.py:30" in accuracy["message"]
    assert "can exceed 1" in accuracy["message"]
    assert accuracy["evidence"][0]["data"]["result"] == [64, 64]
    assert {f["code"] for f in buggy} == {"TL739"}


def test_the_fixed_example_with_its_pairwise_matrices_is_silent():
    result = torchlint_run(str(FOLDER / "fixed" / "train.py"), "-q", "--output-format", "json", cwd=ROOT, timeout=180)
    assert result.findings("runtime only") == []
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("case", ["abs-sum", "reduced-later", "reshaped-earlier", "accuracy", "into-a-loss"])
def test_a_prediction_against_a_target_is_reported(cases, case):
    found, at = cases
    finding = found.get(("TL739", at[case]))
    assert finding is not None, sorted(found)
    assert "[8, 8]" in finding["message"]


def test_the_reduction_may_come_lines_later(cases):
    found, at = cases
    message = found[("TL739", at["reduced-later"])]["message"]
    assert f"`mean` at cases.py:{at['reduced-later'] + 1} reduced it" in message
    assert "`mse_loss` at cases.py" in found[("TL739", at["into-a-loss"])]["message"]


@pytest.mark.parametrize("case", ["pairwise-same-tensor", "unsqueeze-on-the-line", "none-index-both", "outer-over-lines",
                                  "one-tensor", "never-reduced", "same-shape", "scalar"])
def test_pairwise_matrices_and_unreduced_ones_are_not_reported(cases, case):
    found, at = cases
    assert ("TL739", at[case]) not in found


@pytest.mark.parametrize("case", ["poisson", "hinge"])
def test_a_loss_that_broadcasts_without_a_warning_is_reported(cases, case):
    found, at = cases
    finding = found.get(("TL740", at[case]))
    assert finding is not None, sorted(found)
    assert "input of shape [8, 1] and target of shape [8]" in finding["message"]
    assert "broadcasts them to [8, 8] without a warning" in finding["message"]


def test_cross_entropy_targets_that_are_no_probabilities_are_reported(cases):
    found, at = cases
    assert "8 of its 8 rows do not sum to 1 (sums from 2 to 2)" in found[("TL740", at["multi-hot"])]["message"]
    assert "binary_cross_entropy_with_logits" in found[("TL740", at["multi-hot"])]["message"]
    assert "its values run from" in found[("TL740", at["scores"])]["message"]


@pytest.mark.parametrize("case", ["one-hot", "smoothed", "masked-rows", "kl-prior", "warned-by-torch"])
def test_probability_targets_and_losses_torch_warns_about_are_not_tl740(cases, case):
    found, at = cases
    assert ("TL740", at[case]) not in found


def test_torch_warning_stays_tl716(cases):
    found, at = cases
    assert ("TL716", at["warned-by-torch"]) in found
