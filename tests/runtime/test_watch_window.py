"""The probes' watch window (`--watch-steps`): which torch calls the dispatch hands to the
probes, and when it leaves the mode stack so the program runs with no Python per operation.

In process: the dispatch, the step counter and toy probes, as the child wires them."""

from __future__ import annotations

import pytest

from conftest import torchlint_run

torch = pytest.importorskip("torch")

from torch.overrides import TorchFunctionMode  # noqa: E402

from torchlint.runtime.devices.modes import CpuMode  # noqa: E402
from torchlint.runtime.child.probing import Probe, ProbeContext, ProbeDispatch  # noqa: E402
from torchlint.runtime.child.steps import StepCounter  # noqa: E402


class Recorder:
    """Stands in for the event channel."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict]] = []

    def emit(self, kind: str, **data) -> None:
        self.events.append((kind, data))


class Seeing(Probe):
    """Counts the calls of `torch.mul`/`Tensor.mul` and of the optimizer's `add_`s it sees."""

    name = "seeing"

    def install(self) -> None:
        self.calls: list[str] = []
        self.stopped_at: list[int] = []
        self.steps_asked: list[int] = []

    def watches(self, func) -> bool:
        return getattr(func, "__name__", "") in {"mul", "add_", "addcdiv_", "lerp_"}

    def after(self, func, args, kwargs, result) -> None:
        self.calls.append(func.__name__)

    def keeps_watching(self, steps: int) -> bool:
        self.steps_asked.append(steps)
        return super().keeps_watching(steps)

    def stop_watching(self) -> None:
        self.stopped_at.append(len(self.steps_asked))


def wired(probes: list[type], watch_steps: int | None):
    ctx = ProbeContext(Recorder(), None, CpuMode(), progress=lambda message: None)
    ctx.watch_steps = watch_steps
    installed = [cls(ctx) for cls in probes]
    for probe in installed:
        probe.install()
    dispatch = ProbeDispatch(installed, ctx)
    counter = StepCounter(None, lambda *args: None, dispatch.advance)
    return ctx, installed, dispatch, counter


def train(steps: int, optimizer_cls=torch.optim.SGD, **optimizer_options) -> list[int]:
    """A tiny loop; returns the mode-stack depth seen inside each step's forward."""
    model = torch.nn.Linear(3, 1)
    optimizer = optimizer_cls(model.parameters(), lr=0.1, **optimizer_options)
    depths = []
    for _ in range(steps):
        output = model(torch.ones(2, 3))  # the watch window closes at a module call
        depths.append(torch._C._len_torch_function_stack())
        loss = output.mul(2.0).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return depths


def run_wired(probes, watch_steps, steps, **optimizer):
    ctx, installed, dispatch, counter = wired(probes, watch_steps)
    counter.install()
    try:
        with dispatch:
            depths = train(steps, **optimizer)
            after = torch._C._len_torch_function_stack()
    finally:
        counter.uninstall()
    return installed, dispatch, depths, after, ctx


def test_probes_see_calls_only_during_the_watched_steps_and_the_mode_leaves_the_stack():
    (probe,), dispatch, depths, after, _ = run_wired([Seeing], watch_steps=3, steps=6)
    assert probe.calls.count("mul") == 3  # one per watched step, none after
    assert probe.stopped_at == [3]  # asked after steps 1, 2, 3; stopped once, after the third
    assert probe.steps_asked == [1, 2, 3]  # no probe left to ask afterwards
    assert depths == [1, 1, 1, 0, 0, 0]  # off the mode stack from step 4 on
    assert after == 0 and dispatch.retired


def test_watch_steps_none_watches_the_whole_run():
    (probe,), dispatch, depths, _, _ = run_wired([Seeing], watch_steps=None, steps=5)
    assert probe.calls.count("mul") == 5 and probe.stopped_at == []
    assert depths == [1] * 5 and not dispatch.retired
    assert torch._C._len_torch_function_stack() == 0  # the with-block took it off


@pytest.mark.parametrize("options", [{}, {"foreach": True}])
def test_the_optimizer_update_runs_without_the_dispatch(options):
    (probe,), _, _, _, _ = run_wired([Seeing], watch_steps=None, steps=2, optimizer_cls=torch.optim.Adam, **options)
    assert probe.calls.count("mul") == 2
    # Adam's update is lerp_/addcdiv_/add_ (or their _foreach_ forms): none reached the probe.
    assert not {"add_", "addcdiv_", "lerp_"} & set(probe.calls), probe.calls


def test_a_closure_passed_to_step_is_the_program_and_stays_watched():
    ctx, (probe,), dispatch, counter = wired([Seeing], watch_steps=None)
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.LBFGS(model.parameters(), max_iter=2)

    def closure():
        optimizer.zero_grad()
        loss = model(torch.ones(2, 3)).mul(2.0).sum()
        loss.backward()
        return loss

    counter.install()
    try:
        with dispatch:
            optimizer.step(closure)
    finally:
        counter.uninstall()
    assert probe.calls.count("mul") >= 2  # every evaluation of the closure was seen


class SeesTheUpdate(Seeing):
    name = "sees-the-update"
    inside_optimizer_step = True


def test_a_probe_that_asks_sees_the_optimizer_update():
    (probe,), _, depths, _, _ = run_wired([SeesTheUpdate], watch_steps=None, steps=2, optimizer_cls=torch.optim.Adam)
    assert {"lerp_", "addcdiv_"} <= set(probe.calls)


class Longer(Seeing):
    name = "longer"

    def keeps_watching(self, steps: int) -> bool:
        self.steps_asked.append(steps)
        return steps < 5


def test_the_dispatch_stays_while_any_probe_watches_and_each_stops_on_its_own():
    short, longer = run_wired([Seeing, Longer], watch_steps=2, steps=7)[0]
    assert short.calls.count("mul") == 2 and short.stopped_at == [2]
    assert longer.calls.count("mul") == 5 and longer.stopped_at == [5]


class Breaks(Seeing):
    name = "breaks"

    def keeps_watching(self, steps: int) -> bool:
        raise ValueError("broken")


def test_a_probe_whose_keeps_watching_raises_is_switched_off_and_reported():
    (broken, probe), dispatch, depths, _, ctx = run_wired([Breaks, Seeing], watch_steps=2, steps=4)
    assert broken.calls == ["mul"]  # the first step only
    crashed = [data for kind, data in ctx.events.events if kind == "probe-crashed"]
    assert [c["probe"] for c in crashed] == ["breaks"] and "keeps_watching" in crashed[0]["message"]
    assert probe.stopped_at == [2] and depths == [1, 1, 0, 0]


class CallsAModule(Seeing):
    """Runs a module from inside its hook, where the dispatch is off the stack (as the nonfinite
    probe's replay of a model call is)."""

    name = "calls-a-module"

    def install(self) -> None:
        super().install()
        self.helper = torch.nn.Linear(3, 3)

    def after(self, func, args, kwargs, result) -> None:
        super().after(func, args, kwargs, result)
        self.helper(torch.ones(1, 3))


def test_a_module_call_a_probe_makes_off_the_stack_does_not_close_the_window():
    ctx, (probe,), dispatch, counter = wired([CallsAModule], watch_steps=1)
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    counter.install()
    try:
        with dispatch:
            for _ in range(2):
                loss = model(torch.ones(2, 3)).sum()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                torch.mul(loss, 2.0)  # the probe runs its module here, after the step ended
            assert torch._C._len_torch_function_stack() == 0 and dispatch.retired
    finally:
        counter.uninstall()
    assert torch._C._len_torch_function_stack() == 0
    assert probe.calls == ["mul"]  # closed at the next model call, not inside the probe's own


class Outer(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def test_leaving_the_stack_keeps_a_mode_the_program_pushed_above():
    ctx, (probe,), dispatch, counter = wired([Seeing], watch_steps=1)
    counter.install()
    try:
        with dispatch:
            with Outer() as outer:
                train(2)  # Outer sits above the dispatch: no step-off for the optimizer
                stack = [torch._C._get_function_stack_at(i) for i in range(torch._C._len_torch_function_stack())]
                assert stack == [outer]
            assert torch._C._len_torch_function_stack() == 0
    finally:
        counter.uninstall()
    assert probe.stopped_at == [1]


def test_without_an_optimizer_forward_calls_are_the_steps():
    ctx, (probe,), dispatch, counter = wired([Seeing], watch_steps=2)
    model = torch.nn.Linear(3, 1)
    counter.install()
    try:
        with dispatch, torch.no_grad():
            for _ in range(4):
                model(torch.ones(1, 3)).mul(2.0)
    finally:
        counter.uninstall()
    assert probe.calls.count("mul") == 2 and probe.stopped_at == [2]


# -- through `torchlint run` ------------------------------------------------------------------
LATE_NAN = """\
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(8):
    x, y = torch.randn(32, 8), torch.randn(32, 1)
    loss = F.mse_loss(model(x), y)
    if step == 5:
        loss = loss * 0
    loss = loss ** 0.5
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


@pytest.fixture(scope="module")
def late_nan(tmp_path_factory):
    folder = tmp_path_factory.mktemp("late")
    (folder / "train.py").write_text(LATE_NAN)
    return folder


@pytest.mark.slow
def test_a_nan_after_the_watched_steps_is_still_reported_with_the_way_to_name_it(late_nan):
    # --memory-steps would stretch the window to its own length (5 by default).
    result = torchlint_run("train.py", "--output-format", "json", "--watch-steps", "3", "--memory-steps", "2", cwd=late_nan)
    (finding,) = [f for f in result.findings() if f["code"] == "TL736"]
    assert finding["location"]["row"] == 16  # optimizer.step(): where the gradients were read
    assert "(step 6)" in finding["message"] and "--watch-steps 6" in finding["message"]
    assert result.report["outcome"]["watched_steps"] == 3 and result.report["outcome"]["optimizer_steps"] == 8


@pytest.mark.slow
def test_watching_every_step_names_the_operation(late_nan):
    result = torchlint_run("train.py", "--output-format", "json", "--watch-steps", "all", cwd=late_nan)
    (finding,) = [f for f in result.findings() if f["code"] == "TL736"]
    assert finding["location"]["row"] == 13 and "`pow`" in finding["message"]
    assert "watched_steps" not in result.report["outcome"]


@pytest.mark.parametrize("value", ["0", "-2", "some"])
def test_watch_steps_takes_a_positive_number_or_all(value, tmp_path):
    from click.testing import CliRunner

    from torchlint.cli import main

    result = CliRunner().invoke(main, ["run", "train.py", "--watch-steps", value])
    assert result.exit_code == 2 and "--watch-steps" in result.output and "'all'" in result.output
