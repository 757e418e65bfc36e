"""The cache returns exactly what a fresh run would; worker processes change nothing."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from torchlint.cli import main
from torchlint.static import parallel
from torchlint.static.parallel import plan_jobs

BUGGY = "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nstate = torch.load('ckpt.pt', weights_only=True)\n"


def run(*args):
    result = CliRunner().invoke(main, ["check", "--output-format", "json", *args], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output)


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\n")
    for index in range(30):
        body = BUGGY if index % 3 else "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = torch.load(p, map_location='cpu', weights_only=True)\n"
        (tmp_path / f"m{index:02d}.py").write_text(body + f"# file {index}\n" + "y = 1\n" * index)
    (tmp_path / "broken.py").write_text("def f(:\n")
    return tmp_path


def entries(root):
    return sorted(p for p in (root / ".torchlint_cache").rglob("*.json"))


def test_warm_run_equals_cold_run_and_uses_the_cache(tree, monkeypatch):
    from torchlint.static import engine as engine_module

    cold = run(".")
    assert (tree / ".torchlint_cache" / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (tree / ".torchlint_cache" / ".gitignore").read_text().strip().endswith("*")
    assert len(entries(tree)) == 31

    def no_parsing(self, path, text):
        raise AssertionError(f"{path} was checked again despite a warm cache")

    monkeypatch.setattr(engine_module.StaticEngine, "check_text", no_parsing)
    assert run(".") == cold


def test_an_edited_file_is_checked_again(tree):
    run(".")
    (tree / "m00.py").write_text(BUGGY)
    findings = run(".")
    assert ("m00.py", 2) in {(f["filename"], f["location"]["row"]) for f in findings}


def test_same_content_under_another_name_is_reported_under_that_name(tree):
    run(".")
    (tree / "copy.py").write_text((tree / "m01.py").read_text())
    findings = run(".")
    assert {f["filename"] for f in findings if f["filename"] in ("copy.py", "m01.py")} == {"copy.py", "m01.py"}


ANOMALY = "import torch\ntorch.autograd.set_detect_anomaly(True)\n"  # TL605, left alone in tests


def test_a_file_moved_out_of_tests_is_checked_as_the_file_it_now_is(tree):
    (tree / "tests").mkdir()
    (tree / "tests" / "helper.py").write_text(ANOMALY)
    assert "tests/helper.py" not in {f["filename"] for f in run(".")}
    (tree / "tests" / "helper.py").rename(tree / "helper.py")
    assert ("helper.py", "TL605") in {(f["filename"], f["code"]) for f in run(".")}


MODELS = """import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return F.softmax(self.fc(x), dim=1)
"""
TRAIN = """import torch
import torch.nn as nn
from {module} import Net

loss = nn.CrossEntropyLoss()(Net()(torch.randn(2, 4)), torch.tensor([0, 1]))
"""


def test_a_moved_file_is_cited_at_its_new_path(tmp_path, monkeypatch):
    # the file facts of models.py hold its path; the TL101 in train.py quotes them
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models.py").write_text(MODELS)
    (tmp_path / "train.py").write_text(TRAIN.format(module="models"))
    assert "models.py:11" in " ".join(f["message"] for f in run(".") if f["code"] == "TL101")
    (tmp_path / "models.py").rename(tmp_path / "nets.py")
    (tmp_path / "train.py").write_text(TRAIN.format(module="nets"))
    messages = " ".join(f["message"] for f in run(".") if f["code"] == "TL101")
    assert "nets.py:11" in messages and "models.py" not in messages


def test_corrupt_entries_are_ignored_and_rewritten(tree):
    cold = run(".")
    for path in entries(tree)[:10]:
        path.write_text("{not json")
    for path in entries(tree)[10:12]:
        path.write_text('{"key": "someone else"}')
    assert run(".") == cold
    assert all(json.loads(p.read_text())["key"] for p in entries(tree))


def test_changing_the_rule_selection_does_not_reuse_results(tree):
    run(".")
    assert run("--ignore", "TL301", ".") == [f for f in run(".") if f["code"] != "TL301"]
    assert [f["code"] for f in run("--select", "TL0", ".")] == ["TL000"]


def test_no_cache_writes_nothing(tree):
    run("--no-cache", ".")
    assert not (tree / ".torchlint_cache").exists()


def test_suppression_comment_added_later_applies_with_a_warm_cache(tree):
    run(".")
    (tree / "pyproject.toml").write_text('[tool.torchlint]\nper-file-ignores = { "m01.py" = ["TL301"] }\n')
    assert "m01.py" not in {f["filename"] for f in run(".")}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="exercise the fork path where it exists")
def test_jobs_do_not_change_the_output(tree, monkeypatch):
    (tree / "models.py").write_text(
        "import torch.nn.functional as F\nfrom torch import nn\n\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        return F.softmax(x, dim=1)\n"
    )
    (tree / "train.py").write_text(
        "from torch import nn\nfrom models import Net\n\nmodel = Net()\ncriterion = nn.CrossEntropyLoss()\n"
        "loss = criterion(model(x), y)\n"
    )
    single = run("--no-cache", "--jobs", "1", ".")
    planned = []

    def recording_plan(*args):
        planned.append(plan_jobs(*args))
        return planned[-1]

    # These files are tiny: let every byte justify a worker, so the fork path really runs.
    monkeypatch.setattr(parallel, "MIN_BYTES_PER_FORKED_WORKER", 1)
    monkeypatch.setattr(parallel, "plan_jobs", recording_plan)
    assert run("--no-cache", "--jobs", "2", ".") == single
    assert run("--no-cache", "--jobs", "3", ".") == single
    assert planned == [2, 3]
    assert len(single) >= 21


class _Engine:
    """Only what plan_jobs asks of the engine: would this file be parsed?"""

    def may_parse(self, data: bytes) -> bool:
        return b"torch" in data


def test_forked_workers_are_planned_by_bytes_to_parse_not_by_files():
    big = ("m.py", b"import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n" + b"x = 1\n" * 8_000)  # 48 kB: worth a worker
    small = ("s.py", b"import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n")
    unwanted = ("u.py", b"x = 1\n" * 50_000)  # no trigger token: never parsed, never counted
    assert plan_jobs(_Engine(), [big, big], 2, fork=True) == 2
    assert plan_jobs(_Engine(), [big, big, big, big, big], 8, fork=True) == 5
    assert plan_jobs(_Engine(), [small, small, small, small], 2, fork=True) == 1
    assert plan_jobs(_Engine(), [big, unwanted], 2, fork=True) == 1
    assert plan_jobs(_Engine(), [big], 2, fork=True) == 1
    assert plan_jobs(_Engine(), [big, big], 1, fork=True) == 1


def test_spawned_workers_need_enough_files_to_pay_for_their_start():
    small = ("s.py", b"import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n")
    assert plan_jobs(_Engine(), [small] * 7, 2, fork=False) == 1
    assert plan_jobs(_Engine(), [small] * 8, 2, fork=False) == 2


def test_the_engine_plans_with_the_same_prefilter_it_checks_with(tmp_path):
    from torchlint.config import Config
    from torchlint.pluginmanager import make_plugin_manager, rule_registry
    from torchlint.static.engine import StaticEngine

    pm = make_plugin_manager()
    rules = rule_registry(pm)
    engine = StaticEngine(Config(root=tmp_path), pm, rules, {"TL301", "TL302"})
    helper = b"import json\n\ndef load(path):\n    return json.load(open(path))\n"
    assert not engine.may_parse(helper)  # "load", but no torch: never parsed
    assert not engine.check_bytes("helper.py", helper).parsed
    model = b"import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n\nstate = torch.load('ckpt.pt')\n"
    assert engine.may_parse(model)
    assert engine.check_bytes("model.py", model).parsed
