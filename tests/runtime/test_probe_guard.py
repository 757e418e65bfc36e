"""A probe's own torch hooks (module, optimizer, saved-tensor hooks, patched functions) are
guarded like its `before`/`after`: a bug in a probe switches that probe off (TL707) and the
program runs on as it would without torchlint."""

from __future__ import annotations

import pytest

from conftest import torchlint_run

pytest.importorskip("torch")

#: A plugin that breaks one built-in probe's hook, as a probe bug would.
BREAK = '''
import importlib

from torchlint import hookimpl


@hookimpl
def torchlint_probes():
    owner = getattr(importlib.import_module("{module}"), "{owner}")

    def broken(*args, **kwargs):
        raise ValueError("a bug in the probe")

    setattr(owner, "{method}", broken)
    return []
'''

#: (module, class, method): a module hook, a saved-tensor hook of each kind, an optimizer hook.
HOOKS = {
    "nonfinite": ("torchlint.plugins.probes.nonfinite.probe", "NonfiniteProbe", "_leave"),
    "autograd": ("torchlint.plugins.probes.autograd.probe", "AutogradProbe", "_pack"),
    "memory": ("torchlint.plugins.probes.memory.saved", "SavedAccounting", "_pack"),
    "gradient-flow": ("torchlint.plugins.probes.gradient_flow.probe", "GradientFlowProbe", "_before_step"),
}

TRAIN = """import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.randn(5, 4)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("trained", round(loss.item(), 3) >= 0)
"""


@pytest.mark.parametrize("probe", sorted(HOOKS))
def test_a_probe_whose_own_torch_hook_raises_is_switched_off_and_the_program_runs_on(tmp_path, probe):
    module, owner, method = HOOKS[probe]
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nplugins = ["break_probe"]\n')
    (tmp_path / "break_probe.py").write_text(BREAK.format(module=module, owner=owner, method=method))
    (tmp_path / "train.py").write_text(TRAIN)
    run = torchlint_run("train.py", "--output-format", "json", cwd=tmp_path)
    assert run.report["outcome"]["status"] == "completed", run.stderr[-3000:]
    assert "trained True" in run.stderr + run.stdout
    (crash,) = run.findings("runtime only")
    assert crash["code"] == "TL707"
    assert f"probe {probe!r} raised ValueError: a bug in the probe" in crash["message"]
    assert "in broken; it is off for the rest of the run" in crash["message"]
