"""The autograd probe's registry of saved tensors on a long forward: a loop of small module
calls (an RNN cell per time step) saves thousands of tensors before any of them dies.

In process: the probe and the dispatch, as the child wires them."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from torchlint.plugins.probes.autograd.probe import AutogradProbe  # noqa: E402
from torchlint.runtime.devices.modes import CpuMode  # noqa: E402
from torchlint.runtime.frames import default_classifier  # noqa: E402
from torchlint.runtime.child.probing import ProbeContext, ProbeDispatch  # noqa: E402

STEPS = 300  # time steps of one forward: a few thousand saved tensors


class Recorder:
    """Stands in for the event channel."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict]] = []

    def emit(self, kind: str, **data) -> None:
        self.events.append((kind, data))


class Loop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.LSTMCell(1, 4)
        self.head = nn.Linear(4, 1)

    def forward(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        outputs = []
        for step in x.split(1, dim=1):
            state = self.cell(step, state)
            outputs.append(self.head(state[0]))
        return torch.cat(outputs, 1)


@pytest.fixture
def counted(monkeypatch):
    """The probe with a small sweep interval (so that a short loop shows the pattern of a long
    one), counting the tensors it packs and the holders its sweeps read."""
    monkeypatch.setattr(AutogradProbe, "SWEEP_EVERY", 16)
    counts = {"packs": 0, "read": 0, "sweeps": 0}
    pack, sweep = AutogradProbe._pack, AutogradProbe._sweep

    def counting_pack(self, tensor):
        counts["packs"] += 1
        return pack(self, tensor)

    def counting_sweep(self):
        counts["sweeps"] += 1
        counts["read"] += sum(len(refs) for refs in self.saved.values())
        sweep(self)

    monkeypatch.setattr(AutogradProbe, "_pack", counting_pack)
    monkeypatch.setattr(AutogradProbe, "_sweep", counting_sweep)
    ctx = ProbeContext(Recorder(), default_classifier(), CpuMode(), progress=lambda message: None)
    probe = AutogradProbe(ctx)
    probe.install()
    try:
        yield probe, counts
    finally:
        probe.uninstall()


def registry_size(probe: AutogradProbe) -> int:
    return sum(len(refs) for refs in probe.saved.values())


def test_sweeping_a_long_forward_reads_each_saved_tensor_a_bounded_number_of_times(counted):
    probe, counts = counted
    torch.manual_seed(0)
    model = Loop()
    state = (torch.zeros(2, 4), torch.zeros(2, 4))
    model(torch.randn(2, STEPS), state).sum().backward()
    assert counts["packs"] > 20 * AutogradProbe.SWEEP_EVERY and counts["sweeps"] > 1
    # Every holder is alive until backward: a sweep every SWEEP_EVERY packs read them all
    # again each time (about packs**2 / 32: 850,000 reads of 4,800 packs here).
    assert counts["read"] <= 4 * counts["packs"], counts


def test_dead_holders_do_not_pile_up_over_many_forwards(counted):
    probe, counts = counted
    torch.manual_seed(0)
    model = Loop()
    state = (torch.zeros(2, 4), torch.zeros(2, 4))
    model(torch.randn(2, STEPS), state).sum().backward()
    per_forward = counts["packs"]
    for _ in range(5):
        model(torch.randn(2, STEPS), state).sum().backward()
    # At most what one forward saves alive, and as many dead since the last sweep (2 refs
    # for a view: the tensor's and its base's).
    assert registry_size(probe) <= 3 * per_forward


def test_an_edit_of_a_tensor_saved_at_the_first_time_step_is_still_found(counted):
    probe, counts = counted
    ctx = probe.ctx
    torch.manual_seed(0)
    model = Loop()
    first = torch.zeros(2, 4)
    with ProbeDispatch([probe], ctx):
        output = model(torch.randn(2, STEPS), (first, torch.zeros(2, 4)))
        assert counts["sweeps"] > 1  # the holders of the first step went through every sweep
        first.add_(1.0)  # saved by the first call of the cell
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            output.sum().backward()
    evidence = [data for kind, data in ctx.events.events if kind == "evidence"]
    assert [e["code"] for e in evidence] == ["TL103"], evidence
    assert "saved for backward" in evidence[0]["message"]
