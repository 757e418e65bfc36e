"""torch's warnings at the user's line, without torchlint's frames; the ones that signal a bug
become findings (TL713-TL716), also when the program filters warnings out.

One fake-cuda run (its mode adds frames of its own between the user's code and torch) of a
script that warns, then ignores warnings, then makes them errors, then records them, then
dies in a torch operation."""

from __future__ import annotations

import re
import textwrap

import pytest

from conftest import torchlint_run

pytest.importorskip("torch")

pytestmark = pytest.mark.slow

SCRIPT = """
import warnings
import torch
import torch.nn.functional as F
from torch import nn

def probabilities(x):
    return F.softmax(x)

x = torch.randn(2, 3, 4, device="cuda", requires_grad=True)
for _ in range(3):
    probabilities(x)
F.log_softmax(x)
F.log_softmax(x)
copy = torch.tensor(x)
y = x * 2
print("grad:", y.grad)
loss = F.mse_loss(torch.randn(4, 1, device="cuda"), torch.randn(4, device="cuda"))
warnings.filterwarnings("ignore")
probs = nn.Softmax()(x)
warnings.simplefilter("error")
try:
    torch.tensor(y)
except UserWarning as exc:
    print("raised as an error:", type(exc).__name__)
warnings.resetwarnings()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    nn.MSELoss()(torch.randn(3, 1), torch.randn(3))
print("recorded at", [(w.filename.rsplit("/", 1)[-1], w.lineno) for w in caught])

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x.view(-1, 3))

Net().cuda()(x)
"""
LINES = textwrap.dedent(SCRIPT).lstrip("\n").splitlines()


def line_of(text: str, occurrence: int = 1) -> int:
    return [number for number, line in enumerate(LINES, 1) if text in line][occurrence - 1]


SOFTMAX, LOG_SOFTMAX, SECOND_LOG_SOFTMAX = line_of("F.softmax(x)"), line_of("F.log_softmax(x)"), line_of("F.log_softmax(x)", 2)
COPY, GRAD, MSE, IGNORED = line_of("copy = torch.tensor(x)"), line_of("y.grad"), line_of("F.mse_loss"), line_of("nn.Softmax()")
ERROR, RECORDED, FORWARD, CALL = line_of("torch.tensor(y)"), line_of("nn.MSELoss()"), line_of("self.fc(x.view"), line_of("Net().cuda()")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("warnings")
    (folder / "train.py").write_text(textwrap.dedent(SCRIPT).lstrip("\n"))
    return torchlint_run("train.py", "--device", "fake-cuda", "--output-format", "json", cwd=folder, timeout=120)


def shown_warnings(stderr: str) -> list[tuple[str, int, str]]:
    return [(m["file"], int(m["line"]), m["text"][:40])
            for m in re.finditer(r"^(?P<file>\S+?):(?P<line>\d+): UserWarning: (?P<text>.*)$", stderr, re.MULTILINE)]


def test_warnings_are_shown_at_the_user_line_as_python_shows_them(run):
    shown = [(file.rsplit("/", 1)[-1], line) for file, line, _ in shown_warnings(run.stderr)]
    # once per user line (the loop's three calls are one), twice for the same text at two lines,
    # nothing once the program ignores warnings
    assert shown == [("train.py", SOFTMAX), ("train.py", LOG_SOFTMAX), ("train.py", SECOND_LOG_SOFTMAX), ("train.py", COPY),
                     ("train.py", GRAD), ("train.py", MSE)], run.stderr[-3000:]
    # with the user's source line under each, as Python prints it
    assert "\n  return F.softmax(x)\n" in run.stderr and "\n  copy = torch.tensor(x)\n" in run.stderr


def test_the_programs_own_filters_and_records_behave_as_without_torchlint(run):
    assert "raised as an error: UserWarning" in run.stderr
    assert f"recorded at [('train.py', {RECORDED})]" in run.stderr


def test_no_torchlint_frame_in_what_the_user_sees(run):
    assert "probing.py" not in run.stderr and "fake_cuda" not in run.stderr and "/torchlint/" not in run.stderr
    frames = re.findall(r'^  File "([^"]+)", line (\d+)', run.stderr, re.MULTILINE)
    assert [(f.rsplit("/", 1)[-1], int(n)) for f, n in frames if f.endswith("train.py")] == [("train.py", CALL), ("train.py", FORWARD)]
    assert all("torchlint" not in f for f, _ in frames)
    outcome = run.report["outcome"]
    assert "torchlint" not in str(outcome), outcome
    # the shape error it dies of is explained (TL717) at the user line in forward
    (crash,) = [f for f in run.findings("runtime only") if f["code"] == "TL717"]
    assert crash["location"]["row"] == FORWARD


def test_the_bug_signalling_warnings_are_findings_at_the_user_line(run):
    found = {(f["code"], f["location"]["row"]) for f in run.findings("runtime only")}
    assert found == {("TL713", SOFTMAX), ("TL713", LOG_SOFTMAX), ("TL713", SECOND_LOG_SOFTMAX), ("TL713", IGNORED),
                     ("TL714", COPY), ("TL714", ERROR), ("TL715", GRAD), ("TL716", MSE), ("TL716", RECORDED), ("TL717", FORWARD)}
    messages = {(f["code"], f["location"]["row"]): f["message"] for f in run.findings("runtime only")}
    assert "`log_softmax` without `dim`" in messages[("TL713", LOG_SOFTMAX)]
    assert f"`mse_loss` at train.py:{MSE} got input of size [4, 1] and target of size [4]; they broadcast to [4, 4]" in messages[("TL716", MSE)]
    assert run.returncode == 1


def test_a_warning_torch_hides_inside_torch_compile_is_no_finding(tmp_path):
    """Dynamo asks a tensor for `.grad` while it traces, under `torch._logging.hide_warnings`:
    the non-leaf `.grad` warning that raises is torch's to hide, not a TL715 at the user's line."""
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn

        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
        compiled = torch.compile(model, backend="aot_eager")
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(2):
            loss = compiled(torch.randn(4, 8)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        h = model(torch.randn(4, 8))
        print(h.grad)  # the program's own read of a non-leaf's .grad: TL715 all the same
    """).lstrip("\n"))
    run = torchlint_run("train.py", "--output-format", "json", cwd=tmp_path, timeout=240)
    assert run.report["outcome"]["status"] == "completed", run.stderr[-3000:]
    assert [(f["code"], f["location"]["row"]) for f in run.findings("runtime only")] == [("TL715", 13)]


def test_a_warning_is_reissued_without_globals_that_python_3_12_refuses(tmp_path):
    """`runpy.run_path` runs the script as `__main__` with neither `__loader__` nor `__spec__`;
    from Python 3.12 `warn_explicit(module_globals=...)` raises ValueError for such globals, so
    the script's source line is read by file name instead. A module's own globals are kept."""
    import runpy

    from torchlint.runtime.child import user_warnings

    (tmp_path / "train.py").write_text("step = 1\n")
    script_globals = runpy.run_path(str(tmp_path / "train.py"), run_name="__main__")
    assert script_globals["__loader__"] is None and script_globals["__spec__"] is None
    assert user_warnings._loadable(script_globals) is None
    assert user_warnings._loadable(vars(textwrap)) is vars(textwrap)
