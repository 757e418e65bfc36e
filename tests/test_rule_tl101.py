"""TL101 / TL102 beyond their cases: cross-file findings through the CLI on real files, and the
dataflow rules (branches, scopes, parameters) that the engine's semantic model decides."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchlint.cli import main
from torchlint.testing import check_sources

MODELS_SOFTMAX = """
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 3)

    def forward(self, x):
        return F.softmax(self.fc(x), dim=1)
"""

MODELS_LOGITS = """
import torch.nn as nn


class Net(nn.Module):
    def forward(self, x):
        return self.fc(x)
"""

TRAIN_RELATIVE = """
import torch.nn as nn
from .models import Net

criterion = nn.CrossEntropyLoss()


def train(loader):
    model = Net()
    for x, y in loader:
        loss = criterion(model(x), y)
"""

TRAIN_ABSOLUTE = TRAIN_RELATIVE.replace("from .models import Net", "from models import Net")


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))


def run_check(*args: str, select: str = "TL101") -> list[dict]:
    runner = CliRunner()
    result = runner.invoke(main, ["check", "--select", select, "--output-format", "json", "--exit-zero", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_cross_file_relative_import_in_a_package(in_tmp):
    write(in_tmp, {"pkg/__init__.py": "", "pkg/models.py": MODELS_SOFTMAX, "pkg/train.py": TRAIN_RELATIVE})
    findings = run_check("--no-cache", "pkg")
    assert [(f["code"], f["filename"], f["location"]["row"]) for f in findings] == [("TL101", "pkg/train.py", 10)]
    assert "`Net.forward` returns softmax output" in findings[0]["message"]
    assert "pkg/models.py:11" in findings[0]["message"]


def test_cross_file_finding_survives_the_cache(in_tmp):
    write(in_tmp, {"models.py": MODELS_SOFTMAX, "train.py": TRAIN_ABSOLUTE})
    first = run_check(".")
    second = run_check(".")  # facts now come from the cache
    assert first == second
    assert [(f["filename"], f["location"]["row"]) for f in second] == [("train.py", 10)]


def test_cross_file_needs_both_files(in_tmp):
    write(in_tmp, {"models.py": MODELS_SOFTMAX, "train.py": TRAIN_ABSOLUTE})
    # Without a project marker the folder the command runs in is the project: checking
    # train.py reads models.py for its facts, and reports only train.py's findings.
    assert [(f["filename"], f["code"]) for f in run_check("--no-cache", "train.py")] == [("train.py", "TL101")]
    assert run_check("--no-cache", "models.py") == []
    assert run_check("--no-cache", "--no-project-context", "train.py") == []  # the facts of one file only


def test_cross_file_model_returning_logits_is_fine(in_tmp):
    write(in_tmp, {"models.py": MODELS_LOGITS, "train.py": TRAIN_ABSOLUTE})
    assert run_check("--no-cache", ".") == []


def test_same_module_name_in_two_folders_resolves_to_the_neighbour(in_tmp):
    write(
        in_tmp,
        {
            "a/models.py": MODELS_SOFTMAX,
            "a/train.py": TRAIN_ABSOLUTE,
            "b/models.py": MODELS_LOGITS,
            "b/train.py": TRAIN_ABSOLUTE,
        },
    )
    findings = run_check("--no-cache", ".")
    assert [f["filename"] for f in findings] == ["a/train.py"]


def test_cross_file_finding_can_be_suppressed(in_tmp):
    train = TRAIN_ABSOLUTE.replace("loss = criterion(model(x), y)", "loss = criterion(model(x), y)  # noqa: TL101")
    write(in_tmp, {"models.py": MODELS_SOFTMAX, "train.py": train})
    assert run_check("--no-cache", ".") == []


def test_cross_file_nll_loss(in_tmp):
    train = "import torch.nn.functional as F\nfrom models import Net\n\nout = Net()(x)\nloss = F.nll_loss(out, y)\n"
    write(in_tmp, {"models.py": MODELS_SOFTMAX, "train.py": train})
    findings = run_check("--no-cache", ".", select="TL101,TL102")
    assert [(f["code"], f["filename"], f["location"]["row"]) for f in findings] == [("TL102", "train.py", 5)]


# -- dataflow --------------------------------------------------------------------------------
def lines(code: str, select: str = "TL101") -> list[int]:
    result = check_sources({"example.py": textwrap.dedent(code).lstrip("\n")}, select=[select])
    return [f.location.line for f in result.findings]


def test_taint_in_one_branch_reaches_after_the_if_but_not_the_sibling_branch():
    code = """
    import torch.nn.functional as F

    def step(x, y, flag):
        if flag:
            p = F.softmax(x, 1)
            a = F.cross_entropy(p, y)
        else:
            b = F.cross_entropy(p, y)
        return F.cross_entropy(p, y)
    """
    assert lines(code) == [6, 9]


def test_with_block_does_not_make_a_branch():
    code = """
    import torch
    import torch.nn.functional as F

    def step(x, y):
        with torch.autocast("cuda"):
            p = F.softmax(x, 1)
        return F.cross_entropy(p, y)
    """
    assert lines(code) == [7]


def test_loop_body_taint_reaches_uses_in_the_same_body():
    code = """
    import torch.nn.functional as F

    def train(model, loader):
        for x, y in loader:
            for _ in range(2):
                out = model(x).softmax(dim=1)
                loss = F.cross_entropy(out.view(-1, 10), y)
        loss = F.cross_entropy(out, y)
    """
    assert lines(code) == [7, 8]  # after the loops `out` is the last iteration's softmax


def test_nested_function_does_not_see_the_outer_local():
    code = """
    import torch.nn.functional as F

    def outer(x, y):
        p = F.softmax(x, 1)
        def inner(p):
            return F.cross_entropy(p, y)
        return inner
    """
    assert lines(code) == []


def test_self_attribute_assigned_in_a_branch_may_be_the_softmax():
    code = """
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self, probs):
            super().__init__()
            self.out = nn.Softmax(1)
            if not probs:
                self.out = nn.Identity()

        def forward(self, x):
            return self.out(x)

    model = Net(False)
    loss = nn.CrossEntropyLoss()(model(x), y)
    """
    # Branch arms join as may-values: built with probs=True this model feeds probabilities.
    assert lines(code) == [14]


def test_forward_inherited_from_a_same_file_base_and_wrappers():
    code = """
    import torch
    import torch.nn as nn

    class Base(nn.Module):
        def forward(self, x):
            return torch.softmax(self.fc(x), 1)

    class Child(Base):
        pass

    model = nn.DataParallel(Child()).cuda()
    compiled = torch.compile(model)
    loss = nn.CrossEntropyLoss()(compiled(x), y)
    """
    assert lines(code) == [13]


def test_a_parameter_named_like_the_import_is_not_torch():
    code = """
    import torch.nn.functional as F

    def step(F, x, y):
        return F.cross_entropy(F.softmax(x, 1), y)
    """
    assert lines(code) == []


def test_an_object_method_called_softmax_with_a_tensor_argument_is_not_tensor_softmax():
    code = """
    import torch.nn.functional as F

    def step(layer, x, y, dim):
        a = F.cross_entropy(layer.softmax(x), y)
        b = F.cross_entropy(x.softmax(dim), y)
        return a + b
    """
    assert lines(code) == [5]


def test_module_level_name_is_what_its_last_assignment_binds():
    code = """
    import torch.nn as nn

    criterion = nn.CrossEntropyLoss()
    criterion = nn.MSELoss()

    def step(x, y):
        return criterion(x.softmax(1), y)
    """
    assert lines(code) == []


def test_tl102_and_tl101_do_not_report_each_others_loss():
    code = """
    import torch.nn.functional as F

    def step(x, y):
        p = F.softmax(x, 1)
        return F.cross_entropy(p, y) + F.nll_loss(p, y)
    """
    assert lines(code, "TL101") == [5]
    assert lines(code, "TL102") == [5]
    result = check_sources({"example.py": textwrap.dedent(code).lstrip("\n")}, select=["TL101", "TL102"])
    assert sorted((f.code, f.location.column) for f in result.findings) == [("TL101", 12), ("TL102", 36)]


def test_message_names_the_softmax_line():
    code = """
    import torch.nn.functional as F

    probs = F.softmax(x, 1)
    loss = F.cross_entropy(probs, y)
    """
    result = check_sources({"example.py": textwrap.dedent(code).lstrip("\n")}, select=["TL101"])
    assert [f.message for f in result.findings] == [
        "cross_entropy applies log_softmax itself; its input here is softmax output "
        "(from `F.softmax(...)` at line 3): pass the logits"
    ]


def test_script_inside_a_package_folder_importing_its_neighbour_by_file_name(in_tmp):
    write(in_tmp, {"pkg/__init__.py": "", "pkg/models.py": MODELS_SOFTMAX, "pkg/train.py": TRAIN_ABSOLUTE})
    findings = run_check("--no-cache", "pkg")
    assert [(f["filename"], f["location"]["row"]) for f in findings] == [("pkg/train.py", 10)]


def test_resolve_module_from_a_package_init():
    from torchlint.static.context import ProjectContext

    project = ProjectContext(
        facts={},
        module_names={"pkg/__init__.py": "pkg", "pkg/models.py": "pkg.models", "pkg/sub/x.py": "pkg.sub.x"},
    )
    assert project.resolve_module("pkg/__init__.py", "models", level=1) == "pkg/models.py"
    assert project.resolve_module("pkg/sub/x.py", "models", level=2) == "pkg/models.py"
    assert project.resolve_module("pkg/models.py", "sub.x", level=1) == "pkg/sub/x.py"


# -- products with a one-hot selector ------------------------------------------------------------
def test_probabilities_keep_their_meaning_only_through_a_one_hot_selector():
    code = """
    import torch
    import torch.nn.functional as F

    def pick(scores, slot, target, values):
        probs = scores.softmax(-1)
        sel = F.one_hot(slot, 4).float()
        F.cross_entropy(sel @ probs, target)
        F.cross_entropy(torch.matmul(sel, probs), target)
        F.cross_entropy(probs.matmul(sel), target)
        F.cross_entropy(probs @ values, target)
        F.cross_entropy(values @ sel, target)
        twos = torch.zeros(3, 4)
        twos.scatter_(1, slot[:, None], 2.0)
        F.cross_entropy(twos @ probs, target)
        ones = torch.ones(3, 4)
        ones.scatter_(1, slot[:, None], 1)
        F.cross_entropy(ones @ probs, target)
        picked = torch.zeros(3, 4).scatter_(1, slot[:, None], 1)
        F.cross_entropy(picked.mm(probs), target)
        if target is None:
            sel = values
        F.cross_entropy(torch.bmm(sel, probs), target)
    """
    # one-hot (or zeros scattered with 1) on either side: flagged; general values, a scatter of
    # 2, a scatter into ones, a selector that may be something else: quiet
    assert lines(code) == [7, 8, 9, 19]


def test_a_product_of_probabilities_is_no_saved_softmax_output_for_tl103():
    code = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Picker(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x, slot):
            probs = torch.softmax(self.fc(x), dim=-1)
            picked = torch.bmm(F.one_hot(slot, 4).float(), probs)
            picked += 1.0
            return picked
    """
    assert lines(code, select="TL103") == []
