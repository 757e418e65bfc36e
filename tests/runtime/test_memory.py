"""The memory probe: autograd graphs kept from step to step (TL737, confirming TL601 at the
line that keeps them), a death by running out of memory explained (TL738), and the probe's
report section.

The end-to-end tests run the bundled examples (examples/runtime/memory) and a small program
that runs out of CPU memory; the pieces that decide (the accumulator chains, the bytecode
search for `append`, the snapshot summary, the explanation's words, the section) are also
tested in process, on made-up inputs: a CUDA out-of-memory cannot be produced here.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from conftest import EXAMPLES, ROOT, torchlint_run  # noqa: E402

from torchlint.plugins.probes.memory.containers import adding_lines, find_holders  # noqa: E402
from torchlint.plugins.probes.memory.explain import oom_message  # noqa: E402
from torchlint.plugins.probes.memory.growth import GrowthWatch  # noqa: E402
from torchlint.plugins.probes.memory.section import memory_cards, memory_html, memory_lines  # noqa: E402
from torchlint.plugins.probes.memory.snapshot import summarize_snapshot  # noqa: E402
from torchlint.runtime.frames import USER, Site  # noqa: E402

FOLDER = EXAMPLES / "memory"
slow = pytest.mark.slow


def run(*args: str, cwd: Path = ROOT):
    return torchlint_run(*args, "-q", "--output-format", "json", cwd=cwd, timeout=180)


# -- the examples, end to end ---------------------------------------------------------------
@pytest.fixture(scope="module")
def buggy():
    return run(str(FOLDER / "buggy" / "train.py"), "--device", "cpu")


@slow
def test_the_running_total_confirms_tl601_at_the_line_that_adds(buggy):
    (finding,) = [f for f in buggy.findings("confirmed") if f["code"] == "TL601"]
    assert finding["location"]["row"] == 38  # total_loss += loss
    evidence = finding["evidence"][0]
    assert evidence["detail"].startswith("`total_loss` carries an autograd graph from step to step")
    data = evidence["data"]
    assert data["kind"] == "accumulator" and data["links"] >= 2
    # Measured, not assumed: the graph the total keeps grows by a step's graph every step.
    nodes = data["nodes"]
    assert len(nodes) >= 3 and all(b > a for a, b in zip(nodes, nodes[1:]))
    assert len({b - a for a, b in zip(nodes, nodes[1:])}) == 1
    # backward has freed the saved tensors of those steps: nothing saved is still held.
    assert data["held_earlier"] == [0, 0, 0]


@slow
def test_the_evaluation_loop_without_no_grad_is_reported_at_its_append(buggy):
    (finding,) = buggy.findings("runtime only")
    assert (finding["code"], finding["location"]["row"]) == ("TL737", 44)  # outputs.append(model(x))
    data = finding["evidence"][0]["data"]
    assert data["holder"] == "outputs"
    assert data["counts"] == sorted(set(data["counts"])) and data["counts"][-1] >= 2
    # Each kept output holds its batch's activations: the bytes held grow, a batch's worth at a time.
    held = [n for n in data["held_earlier"] if n]
    assert len(held) >= 2 and held[1] == 2 * held[0]
    assert "evaluate under `torch.no_grad()`" in finding["message"]
    assert buggy.report["outcome"]["status"] == "completed"


@slow
def test_the_json_report_holds_the_measurements(buggy):
    memory = buggy.report["memory"]
    assert memory["device"] == "cpu" and memory["watched"] == 5 and memory["findings"] == 2
    rows = memory["iterations"]
    assert [row["steps"] for row in rows if row["kind"] == "step"] == [1, 2, 3, 4, 5]
    evaluation = [row for row in rows if row["kind"] == "forward"]
    assert [row["held"] for row in evaluation] == [(i + 1) * evaluation[0]["peak"] for i in range(len(evaluation))]
    assert memory["modules"][0]["module"] == "Net.features.1" and memory["modules"][0]["type"] == "ReLU"
    assert memory["lines"][0]["line"] == 20 and memory["peak_saved"] >= memory["lines"][0]["bytes"]


@slow
def test_the_text_and_html_reports_show_the_section(tmp_path):
    result = torchlint_run(str(FOLDER / "buggy" / "train.py"), "-q", "--memory-steps", "3", "--report", str(tmp_path),
                           cwd=ROOT, timeout=180)
    text = result.stderr
    assert "memory (cpu: bytes autograd saved for backward, in the first 3 iterations of each loop)" in text
    assert [line.split()[:2] for line in text.splitlines() if line.startswith("  step ")] == [["step", "1"], ["step", "2"], ["step", "3"]]
    assert "examples/runtime/memory/buggy/train.py:38:5: TL601 [confirmed]" in text  # found within 3 steps too
    assert "buggy/train.py:44:1: TL737 [runtime only]" in text
    html = (tmp_path / "report.html").read_text()
    assert '<section id="memory"><h2>Memory</h2>' in html and "Net.features.1 (ReLU)" in html


@slow
def test_the_fixed_program_is_silent():
    result = run(str(FOLDER / "fixed" / "train.py"), "--device", "cpu")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.report["findings"] == []
    # Measured all the same; the text report leaves the figures out when nothing was found.
    assert result.report["memory"]["findings"] == 0 and result.report["memory"]["iterations"]
    text = torchlint_run(str(FOLDER / "fixed" / "train.py"), "-q", cwd=ROOT, timeout=180).stderr
    assert "memory (" not in text and text.rstrip().endswith("0 static findings; 0 runtime-only findings.")


@slow
def test_the_same_under_fake_cuda():
    result = run(str(FOLDER / "buggy" / "train.py"), "--device", "fake-cuda")
    assert {(f["code"], f["location"]["row"]) for f in result.findings()} == {("TL601", 38), ("TL737", 44)}


EPISODES = """\
import torch
from torch import nn

torch.manual_seed(0)
policy = nn.Linear(4, 2)
optimizer = torch.optim.SGD(policy.parameters(), lr=0.01)
for episode in range(3):
    values = []
    for t in range(8):  # the model is called once per move, without a step in between
        values.append(policy(torch.randn(1, 4)))
    loss = torch.cat(values).pow(2).mean()  # the whole episode's graphs, back-propagated at its end
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


@slow
def test_graphs_kept_for_one_backward_pass_at_the_end_of_an_episode_are_left_alone(tmp_path):
    (tmp_path / "train.py").write_text(EPISODES)
    result = run("train.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.report["findings"] == []


PERCEPTUAL = """\
from collections import namedtuple

import torch
from torch import nn

Features = namedtuple("Features", ["low", "high"])


class Frozen(nn.Module):
    def __init__(self):
        super().__init__()
        self.one = nn.Conv2d(3, 8, 3, padding=1)
        self.two = nn.Conv2d(8, 8, 3, padding=1)
        for p in self.parameters():
            p.requires_grad = False

    def forward(self, x):
        low = torch.relu(self.one(x))
        return Features(low, torch.relu(self.two(low)))


torch.manual_seed(0)
generator = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 3, padding=1))
features = Frozen()
optimizer = torch.optim.Adam(generator.parameters(), lr=1e-3)
style = features(torch.randn(1, 3, 16, 16))  # targets from the frozen network, once
KEEP = []
for step in range(8):
    x = torch.randn(4, 3, 16, 16)
    y = generator(x)
    features_y = features(y)  # the same frozen network, twice in one step
    features_x = features(x)
    loss = nn.functional.mse_loss(features_y.high, features_x.high)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    KEEP
"""


@slow
@pytest.mark.parametrize("keep", [False, True])
def test_a_network_called_twice_in_a_step_keeps_nothing_across_steps(tmp_path, keep):
    # pytorch/examples' fast_neural_style: VGG called on the output and on the input in each
    # step; the second call ended an "iteration", and the step then counted that step's own
    # VGG outputs as kept from an earlier one (TL737 on `features_y`).
    program = PERCEPTUAL.replace("    KEEP\n", "    KEEP.append(features_y)\n" if keep else "")
    (tmp_path / "train.py").write_text(program)
    result = run("train.py", cwd=tmp_path)
    codes = [f["code"] for f in result.report["findings"]]
    if keep:  # a real pile across steps is still found, at the line that adds to it
        (finding,) = [f for f in result.report["findings"] if f["code"] == "TL737"]
        assert finding["message"].startswith("`KEEP` keeps model outputs of earlier steps"), finding["message"]
        assert finding["location"]["row"] == 37
    else:
        assert result.returncode == 0 and codes == [], result.stdout + result.stderr[-2000:]


def test_what_an_iteration_made_since_it_began_is_not_kept():
    watch = GrowthWatch(Sites())
    model = _linear()
    held = []
    for step in range(4):
        first = model(torch.randn(2, 4))
        watch.produced(first, "model output", None)
        watch.close_iteration(2 * step + 1)  # the model called again: a boundary inside the step
        second = model(torch.randn(2, 4))
        watch.produced(second, "model output", None)
        held[:] = [first, second]
        assert watch.close_iteration(2 * step + 2, since=2 * step) is None  # the step ends both
    assert [count for _, count in watch.kept_counts][1::2] == [0, 0, 0, 0]


def test_an_evaluation_pile_grows_within_one_run_of_model_calls():
    # A model called twice in each training step: its second call ends an "evaluation"
    # iteration that sees what the step before left in the program's variables (the last
    # loss, until it is reassigned): 0, 1, 2 over the first steps is their start, no pile.
    model = _linear()
    for between_steps, expected in ((True, None), (False, "a pile")):
        watch = GrowthWatch(Sites())
        held = []
        for step in range(3):
            out = model(torch.randn(2, 4))
            watch.produced(out, "model output", None)
            held.append(out)
            kept = watch.close_iteration(step + 1, loop="forward", between_steps=between_steps)
            watch.steps += 1  # an optimizer step after each call
        assert (kept and "a pile") == expected


SPARSE = """\
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"


class GraphConv(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.kernel = nn.Parameter(torch.randn(n_in, n_out) * 0.1)

    def forward(self, features, adjacency):
        return torch.spmm(adjacency, torch.mm(features, self.kernel))  # autograd saves both sparse inputs


torch.manual_seed(0)
nodes = 50
edges = torch.randint(0, nodes, (2, 200))
adjacency = torch.sparse_coo_tensor(edges, torch.ones(200), (nodes, nodes)).coalesce().to(device)
features = (torch.rand(nodes, 16) < 0.2).float().to_sparse().to(device)
labels = torch.randint(0, 3, (nodes,), device=device)
model = GraphConv(16, 3).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for step in range(3):
    loss = nn.functional.cross_entropy(model(features, adjacency), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
if device == "cuda":
    print("allocated", torch.cuda.memory_allocated() > 0)
print("done")
"""


@slow
@pytest.mark.parametrize("device", ["cpu", "fake-cuda"])
def test_sparse_tensors_saved_for_backward_are_weighed_by_their_indices_and_values(tmp_path, device):
    # pytorch/examples' gcn: the saved-tensor hook asked a sparse tensor for its storage,
    # which it has none of, and the error ended the program at its first `torch.mm`.
    (tmp_path / "train.py").write_text(SPARSE)
    result = run("train.py", "--device", device, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert result.report["findings"] == [] and result.report["outcome"]["optimizer_steps"] == 3
    assert "SparseTensorImpl" not in result.stderr


def test_kinds_of_kept_tensors_are_named_in_the_plural():
    from torchlint.plugins.probes.memory.probe import _plural

    assert [_plural(k) for k in ("loss", "model output", "backward root")] == ["losses", "model outputs", "backward roots"]


def test_storages_of_every_layout():
    from torchlint.runtime.storages import storages

    dense = torch.ones(4, 4)
    assert storages(dense) == [(dense.untyped_storage().data_ptr(), 64)]
    coo = dense.to_sparse()
    assert sum(n for _, n in storages(coo)) == 16 * 2 * 8 + 16 * 4  # int64 indices [2, 16], 16 values
    csr = dense.to_sparse_csr()
    assert [n for _, n in storages(csr)][0::2] == [5 * 8, 16 * 4]  # row pointers, values (and column indices)
    assert len(storages(dense.to_sparse_csc())) == 3


# -- running out of memory, end to end (the CPU allocator's failure) -------------------------
OOM_PROGRAM = """\
import torch
import torch.nn.functional as F
from torch import nn


class Widen(nn.Module):
    def __init__(self):
        super().__init__()
        self.factor = 1

    def forward(self, x):
        return x.repeat(1, self.factor)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 64), nn.ReLU())
        self.widen = Widen()
        self.head = nn.Linear(64, 2)

    def forward(self, x):
        h = self.widen(self.body(x))
        return self.head(h[:, :64])


model = Net()
optimizer = torch.optim.Adam(model.parameters())
for step in range(4):
    if step == 2:
        model.widen.factor = 2**40  # far more memory than any machine has
    x, y = torch.randn(32, 8), torch.randint(0, 2, (32,))
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


@slow
def test_running_out_of_memory_is_explained(tmp_path):
    (tmp_path / "train.py").write_text(OOM_PROGRAM)
    result = run("train.py", cwd=tmp_path)
    (finding,) = result.findings()
    assert (finding["code"], finding["location"]["row"]) == ("TL738", 12)  # the line that asked
    message = finding["message"]
    assert message.startswith("CPU out of memory in `Net.widen` (Widen) at train.py:12, in step 3 (after 2 optimizer steps")
    assert "it tried to allocate 8192.00 TiB" in message
    # What held memory then: the first step's activations, by line and by module.
    assert "saved for backward and still held: 9.0 KiB, most by train.py:23 9.0 KiB" in message
    assert "`Net.body.1` 8.0 KiB" in message and "optimizer state 5.5 KiB" in message
    data = finding["evidence"][0]["data"]
    assert data["steps"] == 2 and data["state"]["parameters"] == data["state"]["gradients"] > 0
    assert result.report["outcome"]["status"] == "raised"  # explained: no separate crash finding


# -- the pieces, in process -----------------------------------------------------------------
class Sites:
    """Stands in for ``ctx.site()``: the line the test says it is on."""

    def __init__(self) -> None:
        self.line = 0

    def __call__(self) -> Site:
        return Site("/project/train.py", self.line, "train")


def _linear():
    torch.manual_seed(0)
    return torch.nn.Linear(4, 1)


def _chain_run(steps: int, backward_total: bool = False, reuse_weight: bool = False):
    """What GrowthWatch sees of a loop: each sum the loop computes, and each backward root."""
    sites = Sites()
    watch = GrowthWatch(sites)
    model = _linear()
    total = 0
    sites.line = 5
    cached = model.weight * 2  # derived once, before the loop
    watch.combined((model.weight, 2), {}, cached)
    for step in range(steps):
        loss = model(torch.randn(3, 4)).pow(2).mean()
        sites.line = 10
        if reuse_weight:
            scaled = loss.mul(cached)
            watch.combined((loss, cached), {}, scaled)
        sites.line = 20
        before = total
        total = total + loss if isinstance(total, torch.Tensor) else loss.add(0)
        watch.combined((before, loss) if isinstance(before, torch.Tensor) else (loss, 0), {}, total)
        if backward_total:
            watch.backpropagated(total)
            total.backward(retain_graph=True)
            total = 0
        watch.close_iteration(step + 1)
    return watch


def test_an_accumulator_carried_into_later_iterations_grows_by_a_graph_each():
    watch = _chain_run(4)
    (chain,) = watch.growing_chains()
    assert chain.links == 3 and [s.line for s in chain.sites] == [20]
    counts = [n for _, n in chain.nodes]
    assert all(b > a for a, b in zip(counts, counts[1:]))


def test_an_accumulation_back_propagated_on_purpose_is_left_alone():
    assert _chain_run(4, backward_total=True).growing_chains() == []


def test_a_tensor_made_once_and_reused_every_iteration_is_no_chain():
    watch = _chain_run(4, reuse_weight=True)
    assert [[s.line for s in c.sites] for c in watch.growing_chains()] == [[20]]  # the total only


def test_kept_outputs_are_reported_once_their_number_grows():
    sites = Sites()
    watch = GrowthWatch(sites)
    model = _linear()
    outputs, seen = [], []
    for step in range(4):
        out = model(torch.randn(2, 4))
        watch.produced(out, "model output", Site("/project/eval.py", 7, "evaluate"))
        outputs.append(out)
        seen.append(watch.close_iteration(step + 1))
    assert seen[:2] == [None, None]
    kept = seen[2]
    assert kept is not None and len(kept.tensors) == 2 and kept.kinds == {"model output": 2}
    assert [count for _, count in watch.kept_counts] == [0, 1, 2, 3]


def test_one_stale_tensor_is_not_a_pile():
    watch = GrowthWatch(Sites())
    model = _linear()
    previous = []
    for step in range(5):
        out = model(torch.randn(2, 4))
        watch.produced(out, "model output", None)
        assert watch.close_iteration(step + 1) is None
        previous[:] = [out]  # kept one iteration longer, as `prev = out` would
    assert [count for _, count in watch.kept_counts] == [0, 1, 1, 1, 1]


# -- the saved-tensor accounting on a long forward -------------------------------------------
class _Loop(torch.nn.Module):
    """A small module called once per time step, as an RNN's loop calls its cell."""

    def __init__(self) -> None:
        super().__init__()
        self.cell = torch.nn.LSTMCell(1, 4)

    def forward(self, x):
        h = c = torch.zeros(2, 4)
        outputs = []
        for step in x.split(1, dim=1):
            h, c = self.cell(step, (h, c))
            outputs.append(h)
        return torch.cat(outputs, 1)


def test_a_long_forward_is_swept_in_work_linear_in_the_tensors_it_saves(monkeypatch):
    from torchlint.plugins.probes.memory import saved

    # A small sweep interval, so that 300 time steps show what 1000s would with the real one.
    monkeypatch.setattr(saved, "SWEEP_EVERY", 16)
    counts = {"sweeps": 0, "read": 0}
    sweep = saved.SavedAccounting._sweep

    def counting_sweep(self):
        counts["sweeps"] += 1
        counts["read"] += len(self._held)
        sweep(self)

    monkeypatch.setattr(saved.SavedAccounting, "_sweep", counting_sweep)
    accounting = saved.SavedAccounting(lambda: Site("/project/train.py", 9, "forward"), lambda: "Loop.cell")
    accounting.install()
    try:
        torch.manual_seed(0)
        model = _Loop()
        output = model(torch.randn(2, 300))
        held = len(accounting._held)  # nothing has died: every holder of the forward
        assert held > 40 * saved.SWEEP_EVERY and counts["sweeps"] > 1
        # A sweep every SWEEP_EVERY holders read them all each time (470,000 reads of 3,900).
        assert counts["read"] <= 2 * held, (counts, held)
        saved_bytes = accounting.live_bytes
        assert saved_bytes > 0
        output.sum().backward()
        assert accounting.live_bytes == 0  # each holder, swept or not, was counted once and freed
        for _ in range(5):
            model(torch.randn(2, 300)).sum().backward()
        accounting.held()  # an iteration boundary sweeps
        assert accounting._held == [] and accounting._peak_iteration == saved_bytes
    finally:
        accounting.uninstall()


def test_the_container_and_its_append_line_are_found():
    source = textwrap.dedent("""
        def evaluate(model, batches, targets):
            history = []
            for x in batches:
                out = model(x)
                history.append(
                    (out, 1))
                targets.probe(history)
    """)
    namespace: dict = {}
    exec(compile(source, "/project/eval.py", "exec"), namespace)
    tensors = [torch.randn(2, requires_grad=True) * 2 for _ in range(3)]
    found = {}

    class Probe:
        def probe(self, history):
            frame = sys._getframe(1)
            verdict = lambda filename: USER if filename == "/project/eval.py" else 2  # noqa: E731
            found["holders"] = find_holders({id(t) for t in tensors}, frame, verdict, lambda f: f)

    namespace["evaluate"](lambda x: x, iter(tensors), Probe())
    (holder,) = found["holders"]
    assert (holder.expression, holder.count, holder.length) == ("history", 3, 3)
    assert [(s.path, s.line) for s in holder.adds] == [("/project/eval.py", 6)]


def test_adding_lines_reads_attributes_and_nested_code():
    code = compile(textwrap.dedent("""
        class Trainer:
            def fit(self, loader):
                for x in loader:
                    self.history.append(x)
                    seen = [self.other.append(y) for y in x]
                    self.history.extend([x])
    """), "t.py", "exec")
    assert adding_lines(code, "self.history") == [5, 7]
    assert adding_lines(code, "self.other") == [6]
    assert adding_lines(code, "history") == []


# -- TL738's words and the CUDA snapshot, on synthetic data ---------------------------------
def _frame(filename: str, line: int, name: str = "forward") -> dict:
    return {"filename": filename, "line": line, "name": name}


SNAPSHOT = {
    "segments": [
        {"total_size": 6 << 30, "blocks": [
            {"state": "active_allocated", "size": 2 << 30, "frames": [
                _frame("/torch/nn/modules/conv.py", 454, "_conv_forward"), _frame("/project/models.py", 22), _frame("/project/train.py", 40)]},
            {"state": "active_allocated", "size": 1 << 30, "frames": [_frame("/project/models.py", 22)]},
            {"state": "inactive", "size": 1 << 30, "frames": [_frame("/project/models.py", 30)]},
            {"state": "active_allocated", "size": 512 << 20, "history": [
                {"real_size": 512 << 20, "frames": [_frame("/torch/optim/adam.py", 100, "step"), _frame("/project/train.py", 44, "<module>")]}]},
            {"state": "active_allocated", "size": 256 << 20, "frames": [_frame("/torch/cuda/__init__.py", 1)]},
        ]},
        {"total_size": 2 << 30, "blocks": []},
    ],
    "device_traces": [[{"action": "alloc", "size": 10}, {"action": "oom", "size": 3 << 30, "device_free": 1 << 20}]],
}


def test_a_snapshot_is_summarized_by_the_user_line_that_allocated():
    summary = summarize_snapshot(SNAPSHOT, lambda filename: filename.startswith("/project/"))
    assert summary["allocated"] == (2 << 30) + (1 << 30) + (512 << 20) + (256 << 20)
    assert summary["reserved"] == 8 << 30
    assert summary["unattributed"] == 256 << 20
    assert summary["failed"] == 3 << 30
    assert [(e["path"], e["line"], e["bytes"], e["blocks"]) for e in summary["lines"]] == [
        ("/project/models.py", 22, 3 << 30, 2),
        ("/project/train.py", 44, 512 << 20, 1),
    ]
    assert summarize_snapshot({}, lambda f: True)["lines"] == []


def test_a_cuda_out_of_memory_is_explained_from_its_facts():
    snapshot = summarize_snapshot(SNAPSHOT, lambda filename: filename.startswith("/project/"))
    facts = {
        "device": "cuda", "module": "ResNet.layer3.1.conv2", "module_type": "Conv2d", "at": "models.py:22",
        "moment": "in step 13 (after 12 optimizer steps, 13 model calls)", "requested": "2.00 GiB",
        "totals": {"allocated": 77 << 30, "reserved": 78 << 30, "free": 1 << 29, "total": 80 << 30},
        "saved": {"live": True, "unit": "step", "total": 60 << 30,
                  "lines": [{"where": "models.py:22", "bytes": 40 << 30}, {"where": "models.py:25", "bytes": 20 << 30}],
                  "modules": [{"module": "ResNet.layer3", "bytes": 50 << 30}]},
        "snapshot": snapshot,
        "state": {"parameters": 1 << 30, "gradients": 1 << 30, "optimizer_state": 2 << 30},
    }
    assert oom_message(facts) == (
        "CUDA out of memory in `ResNet.layer3.1.conv2` (Conv2d) at models.py:22, in step 13 (after 12 optimizer steps, "
        "13 model calls): it tried to allocate 2.00 GiB; 77.00 GiB allocated by tensors, 78.00 GiB reserved, "
        "512.0 MiB free of 80.00 GiB; saved for backward and still held: 60.00 GiB, most by models.py:22 40.00 GiB, "
        "models.py:25 20.00 GiB; by module `ResNet.layer3` 50.00 GiB; live allocations by the line that made them: "
        "models.py:22 3.00 GiB, train.py:44 512.0 MiB (256.0 MiB made outside the program's code); "
        "parameters 1.00 GiB, gradients 1.00 GiB, optimizer state 2.00 GiB"
    )
    # Past the watched steps: the per-step figures of the first steps, said as such.
    facts["saved"]["live"] = False
    facts["totals"] = {}
    assert "; in the first steps at most 60.00 GiB was saved for backward at once; in one forward pass the most by models.py:22" in oom_message(facts)


# -- the section --------------------------------------------------------------------------
RESULT = {
    "device": "cuda",
    "watched": 5,
    "peak_saved": 3 << 20,
    "iterations": [
        {"kind": "step", "steps": 1, "forwards": 1, "peak": 3 << 20, "held": 0, "earlier": 0, "allocated": 10 << 20, "max_allocated": 20 << 20},
        {"kind": "forward", "steps": 1, "forwards": 3, "peak": 1 << 20, "held": 2 << 20, "earlier": 1 << 20, "allocated": 12 << 20, "max_allocated": 20 << 20},
    ],
    "modules": [{"module": "Net.features.1", "type": "ReLU", "bytes": 2 << 20}],
    "lines": [{"path": "/project/models.py", "line": 19, "bytes": 3 << 20, "source": "return self.head(x) < 1"}],
}


def test_the_section_in_text():
    assert memory_lines(RESULT, Path("/project")) == [
        "memory (cuda: bytes autograd saved for backward, in the first 5 iterations of each loop)",
        "  after             peak saved   still held   from earlier               allocated           max allocated",
        "  step 1               3.0 MiB          0 B            0 B                10.0 MiB                20.0 MiB",
        "  model call 3         1.0 MiB      2.0 MiB        1.0 MiB                12.0 MiB                20.0 MiB",
        "  per module, the most saved for backward in one forward pass:",
        "       2.0 MiB  Net.features.1 (ReLU)",
        "  per user line:",
        "       3.0 MiB  models.py:19  return self.head(x) < 1",
    ]
    assert memory_cards(RESULT) == (
        ("saved for backward", "3.0 MiB", "the most alive at once"),
        ("still held", "2.0 MiB", "after model call 3, 1.0 MiB from earlier iterations"),
    )


def test_the_section_in_html_escapes_what_it_shows():
    html = memory_html(RESULT, Path("/project"))
    assert html.startswith('<section id="memory"><h2>Memory</h2>') and html.endswith("</section>")
    assert "models.py:19  return self.head(x) &lt; 1" in html and "Net.features.1 (ReLU)" in html
    assert "<th>max allocated</th>" in html and "<td>model call 3</td>" in html
