"""The probes are invisible to Dynamo: a function or module the program compiles breaks its
graph, and compiles, exactly as often with every built-in probe installed as without.

In process, with the probes installed the way the child installs them (their hooks, the
step counter, the dispatch mode, the compiled-region wrapper), and the `eager` backend
(Dynamo alone: what it traces is the question, not code generation).
"""

from __future__ import annotations

import contextlib

import pytest

torch = pytest.importorskip("torch")

import torch._dynamo  # noqa: E402
from torch import nn  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402

from torchlint.runtime.devices.modes import CpuMode  # noqa: E402
from torchlint.runtime.frames import default_classifier  # noqa: E402
from torchlint.runtime.child.probing import ProbeContext, ProbeDispatch  # noqa: E402


class Recorder:
    """Stands in for the event channel."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict]] = []

    def emit(self, kind: str, **data) -> None:
        self.events.append((kind, data))


@contextlib.contextmanager
def under_probes():
    """Every built-in probe installed, as `torchlint run --device cpu --compile=eager` installs
    them (the compile probe's own hooks and its listener for the program's compiles too)."""
    import sys

    from torchlint.pluginmanager import make_plugin_manager
    from torchlint.runtime.child.main import _chosen_probes, _uninstall
    from torchlint.runtime.compile.regions import CompiledRegions, Ownership
    from torchlint.runtime.child.steps import StepCounter
    from torchlint.runtime.frames import own_dirs

    recorder = Recorder()
    ctx = ProbeContext(recorder, default_classifier(), CpuMode(), progress=lambda message: None)
    ctx.options = {"compile": "eager"}
    classes = _chosen_probes([cls for group in make_plugin_manager().hook.torchlint_probes() for cls in (group or ())], ctx.options)
    assert "compile" in [cls.name for cls in classes]
    probes = [cls(ctx) for cls in classes]
    owned = Ownership(own_dirs(), tuple(sys.modules[cls.__module__].__file__ for cls in classes))
    regions = CompiledRegions(ctx.frames, owned, lambda mode: isinstance(mode, ProbeDispatch))
    ctx.compiled_regions = regions
    regions.install()
    for probe in probes:
        probe.install()
    counter = StepCounter(None, lambda *a: None)
    counter.install()
    try:
        with ProbeDispatch(probes, ctx):
            yield recorder
    finally:
        counter.uninstall()
        _uninstall(probes, ctx)
        regions.uninstall()
    assert not [e for e in recorder.events if e[0] == "probe-crashed"], recorder.events


def one_break(x, y):
    a = torch.neg(x)
    b = torch.maximum(y, a)
    print("a graph break of the program's own")
    return torch.cat([b], dim=1) * 2


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.norm = nn.LayerNorm(3)

    def forward(self, x):
        return torch.relu(self.norm(self.fc(x))).softmax(-1)


def compile_and_count(run):
    """(graph breaks, frames compiled, warnings, result) of ``run()``, from a fresh Dynamo."""
    import warnings

    torch._dynamo.reset()
    counters.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run()
    breaks = sum(counters["graph_break"].values())
    frames = counters["stats"]["unique_graphs"]
    torch._dynamo.reset()
    return breaks, frames, [str(w.message) for w in caught], result


def _function():
    torch.manual_seed(0)
    x, y = torch.randn(1, 8), torch.randn(6, 8)
    compiled = torch.compile(one_break, backend="eager")
    return [compiled(x, y), compiled(x, y)]


def _module_training():
    torch.manual_seed(0)
    model = Net()
    compiled = torch.compile(model, backend="eager")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(3):
        loss = compiled(torch.randn(5, 4)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return losses


def _module_compile_method():
    torch.manual_seed(0)
    model = Net()
    model.compile(backend="eager")
    return [model(torch.randn(5, 4)) for _ in range(2)]


def _nested_and_decorated():
    torch.manual_seed(0)
    inner = torch.compile(torch.sigmoid, backend="eager")
    model = torch.compile(Net(), backend="eager")

    @torch.compile(backend="eager", dynamic=False)
    def outer(x):
        return inner(model(x)) * 2  # compiled callables called from a compiled one

    return [outer(torch.randn(5, 4)), inner(torch.randn(3))]


@pytest.mark.parametrize("program", [_function, _module_training, _module_compile_method, _nested_and_decorated],
                         ids=["function", "module-training", "module.compile", "nested-and-decorated"])
def test_the_probes_add_no_graph_break_and_no_recompilation(program, capsys):
    plain = compile_and_count(program)
    with under_probes():
        probed = compile_and_count(program)
    assert probed[:3] == plain[:3], (probed[:3], plain[:3])
    for a, b in zip(plain[3], probed[3]):
        assert torch.equal(a, b)
    if program is _function:
        assert plain[0] == 1  # the program's own print, and nothing else


def test_the_probes_are_back_after_a_compiled_call():
    from torch.nn.modules import module as module_hooks

    with under_probes():
        hooks = dict(module_hooks._global_forward_pre_hooks)
        stack = [torch._C._get_function_stack_at(i) for i in range(torch._C._len_torch_function_stack())]
        saved = torch._C._autograd._top_saved_tensors_default_hooks(True)
        compiled = torch.compile(one_break, backend="eager")
        compiled(torch.randn(1, 8), torch.randn(6, 8))
        assert dict(module_hooks._global_forward_pre_hooks) == hooks
        assert [torch._C._get_function_stack_at(i) for i in range(torch._C._len_torch_function_stack())] == stack
        assert torch._C._autograd._top_saved_tensors_default_hooks(True) == saved
        assert any(isinstance(mode, ProbeDispatch) for mode in stack) and saved is not None and hooks
    torch._dynamo.reset()


def test_steps_counts_the_calls_of_a_compiled_model(write, tmp_path):
    """The step counter's hooks are out of sight inside a compiled call too: it is told of it."""
    from conftest import torchlint_run

    write("infer.py", """
        import torch
        model = torch.compile(torch.nn.Linear(4, 2), backend="eager")
        for i in range(5):
            model(torch.ones(1, 4))
            print("called", i)
    """)
    run = torchlint_run("infer.py", "--steps", "2", "--output-format", "json", cwd=tmp_path)
    assert run.report["outcome"]["status"] == "steps-reached", run.stderr[-3000:]
    assert run.report["outcome"]["forward_calls"] == 2 and "called 0" in run.stderr and "called 1" not in run.stderr


def test_a_run_that_compiles_nothing_never_imports_dynamo(write, tmp_path):
    """Importing Dynamo costs a run most of a second: the wrapper waits for the first compile.
    A fresh start: the test workers' warm servers import Dynamo before they fork a run."""
    from conftest import torchlint_run

    write("train.py", """
        import sys
        import torch
        print(torch.nn.Linear(2, 2)(torch.ones(1, 2)).shape, "dynamo imported:", "torch._dynamo" in sys.modules)
    """)
    run = torchlint_run("train.py", "--output-format", "json", cwd=tmp_path, env={"TORCHLINT_TEST_COLD": "1"})
    assert "dynamo imported: False" in run.stderr, run.stderr[-3000:]


def test_steps_counts_an_optimizer_step_inside_a_compiled_training_step(write, tmp_path):
    from conftest import torchlint_run

    write("train.py", """
        import torch
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

        @torch.compile(backend="eager")
        def train_step(x):
            loss = model(x).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            return loss

        for i in range(5):
            train_step(torch.ones(2, 4))
            print("stepped", i)
    """)
    run = torchlint_run("train.py", "--steps", "2", "--output-format", "json", cwd=tmp_path)
    assert run.report["outcome"]["status"] == "steps-reached", run.stderr[-3000:]
    assert run.report["outcome"]["optimizer_steps"] == 2 and "stepped 0" in run.stderr and "stepped 1" not in run.stderr
