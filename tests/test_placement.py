"""The placement questions (torchlint.semantic.placement) answered for a rule that asks them:
which functions handle data on the CPU by design, whose callers move the result, whether the
file moves a model, which attributes hold parameters, and where CPU factories meet device
tensors."""

from __future__ import annotations

import textwrap

import libcst as cst

from torchlint.pluginmanager import hookimpl
from torchlint.rule import Rule
from torchlint.semantic.placement import Placement, runs_in_data_loading
from torchlint.testing import check_sources

SOURCE = textwrap.dedent(
    """
    import torch
    import torch.nn as nn
    from torch.utils.data import Dataset

    class Frames(Dataset):
        def __getitem__(self, i):
            return torch.zeros(3)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(1))
            layers = [nn.Linear(4, 4) for _ in range(2)]
            self.body = nn.Sequential(*layers)
            self.name = "net"

        def forward(self, x):
            return self.body(x) * torch.arange(4)

    def jitter(batch):
        return batch + torch.randn(batch.shape)

    def embed(t: torch.Tensor):
        return torch.arange(8) * t

    def collate_frames(items):
        return torch.stack(items)

    def run(batch, device):
        model = Net().to(device)
        moved = jitter(batch).to(device)
        return model(moved), embed(batch)
    """
)


class Asker(Rule):
    """Reports, at each function, what Placement answers about it."""

    code, name, summary = "XP900", "placement-asker", "asks the placement questions"
    analyses = (Placement,)

    def finish(self) -> None:
        placement = self.ctx.analysis(Placement)
        for statement in self.ctx.module.body:
            functions = [(statement, None)] if isinstance(statement, cst.FunctionDef) else []
            if isinstance(statement, cst.ClassDef):
                functions = [(s, statement) for s in statement.body.body if isinstance(s, cst.FunctionDef)]
                tensors, modules = placement.parameter_attributes(statement)
                self.report(statement, f"{statement.name.value} params={sorted(tensors)} modules={sorted(modules)}")
            for function, cls in functions:
                name = function.name.value
                callers = placement.callers_move_result(name if cls is None else f"self.{name}")
                self.report(
                    function,
                    f"{name} loading={runs_in_data_loading(function, cls)} callers_move={callers} "
                    f"forward={placement.is_forward(function)}",
                )
        self.report(self.ctx.module, f"moves_a_model={placement.moves_a_model()}")
        for meeting, _ in placement.meetings():
            self.report(meeting.cpu.origin, f"meets {meeting.other}")


def answers(source: str) -> list[str]:
    class Pack:
        @hookimpl
        def torchlint_rules(self):
            return [Asker]

    findings = check_sources({"a.py": source}, select=["XP900"], extra_plugins=[Pack()]).findings
    return [f"{f.location.line}: {f.message}" for f in findings]


def test_placement_answers_each_question_about_a_file():
    assert answers(SOURCE) == [
        "1: moves_a_model=True",
        "6: Frames params=[] modules=[]",
        "7: __getitem__ loading=True callers_move=False forward=False",
        "10: Net params=['scale'] modules=['body']",
        "11: __init__ loading=False callers_move=False forward=False",
        "18: forward loading=False callers_move=False forward=True",
        "19: meets self",  # the CPU arange meets the Linear layers' output
        # `jitter(batch).to(device)`: its CPU noise meets a CPU batch; no meeting read
        "21: jitter loading=False callers_move=True forward=False",
        "24: embed loading=False callers_move=False forward=False",
        "25: meets t",
        "27: collate_frames loading=True callers_move=False forward=False",
        "30: run loading=False callers_move=False forward=False",
    ]


def test_a_file_that_sets_the_default_device_has_no_meetings():
    source = SOURCE.replace("import torch\n", "import torch\ntorch.set_default_device('cuda')\n", 1)
    assert not [line for line in answers(source) if "meets" in line]


def test_a_loop_over_the_builtin_range_sends_no_function_through_the_device_flow(monkeypatch):
    """The flow is read for functions that make tensors: `range` is a torch factory's name too,
    but a bare `range(n)` is the builtin unless the file imported torch's."""
    read: list[str] = []
    flow_of = Placement.flow_of
    monkeypatch.setattr(Placement, "flow_of", lambda self, node, cls: read.append(node.name.value) or flow_of(self, node, cls))
    source = textwrap.dedent(
        """
        import torch

        def train(model, loader, device):
            for _ in range(3):
                for x in loader:
                    model(x.to(device)).sum().backward()
        """
    )
    assert answers(source) == ["1: moves_a_model=False", "4: train loading=False callers_move=False forward=False"]
    assert read == []
    answers(source.replace("import torch\n", "import torch\nfrom torch import range\n", 1))
    assert read == ["train"]
