"""`torchlint run` is invisible to the program: its stdout, stderr and stdin are the ones
`torchlint run` was given (a terminal stays a terminal), its exit status is the program's own
when the program fails, its traceback is python's, and torchlint causes no warning of its own.

Each run here is a fresh `python -m torchlint run` with real pipes or a pty: the warm server
of the other tests hands its runs pipes of its own."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

STREAMS = textwrap.dedent("""\
    import sys
    import torch

    print("to stdout", torch.ones(2).sum().item())
    print("to stderr", file=sys.stderr)
    print("read:", repr(sys.stdin.read()))
    print("ttys:", sys.stdin.isatty(), sys.stdout.isatty(), sys.stderr.isatty())
    sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
""")

BACKWARD_FAILS = textwrap.dedent("""\
    import torch

    x = torch.randn(3, requires_grad=True)
    y = torch.sigmoid(x)
    y.mul_(2)
    y.sum().backward()
""")

TRAINING_STEP = textwrap.dedent("""\
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 4))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(4):
        x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
    model.eval()
    with torch.no_grad():
        print("eval", model(torch.randn(2, 8)).shape)
    torch.save(model.state_dict(), "model.pt")
    model.load_state_dict(torch.load("model.pt", map_location="cpu", weights_only=True))
""")


def _python(*args: str, cwd: Path, stdin: bytes = b"", env: dict | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, input=stdin, capture_output=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


def _torchlint_run(*args: str, cwd: Path, stdin: bytes = b"", env: dict | None = None, timeout: float = 180):
    return _python("-m", "torchlint", "run", *args, cwd=cwd, stdin=stdin, env=env, timeout=timeout)


def _without_our_lines(stderr: bytes) -> bytes:
    return b"".join(line for line in stderr.splitlines(keepends=True) if not line.startswith(b"torchlint"))


def test_the_programs_streams_stdin_and_exit_status_are_its_own(tmp_path):
    (tmp_path / "prog.py").write_text(STREAMS)
    plain = _python("prog.py", "3", cwd=tmp_path, stdin=b"hi\n")
    run = _torchlint_run("prog.py", "-o", "report.txt", "--", "3", cwd=tmp_path, stdin=b"hi\n")
    assert plain.returncode == 3
    assert run.returncode == 3, run.stderr.decode()[-3000:]
    assert run.stdout == plain.stdout  # byte for byte: `> log.txt` and `| tee` see the program's output
    assert b"read: 'hi\\n'" in run.stdout
    assert _without_our_lines(run.stderr) == plain.stderr == b"to stderr\n"
    assert "TL702" in (tmp_path / "report.txt").read_text()  # the report went where -o said


def test_a_clean_program_exits_0_and_the_text_report_goes_to_stderr(tmp_path):
    (tmp_path / "prog.py").write_text(STREAMS)
    run = _torchlint_run("prog.py", cwd=tmp_path)
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    assert run.stdout.startswith(b"to stdout 2.0\n")
    assert b"torchlint run prog.py --device cpu: completed" in run.stderr
    assert b"torchlint run" not in run.stdout


def test_a_json_report_on_stdout_sends_the_programs_stdout_to_stderr_and_says_so(tmp_path):
    (tmp_path / "prog.py").write_text(STREAMS)
    run = _torchlint_run("prog.py", "--output-format", "json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    report = json.loads(run.stdout)
    assert report["outcome"]["status"] == "completed"
    assert b"to stdout 2.0\n" in run.stderr
    assert b"torchlint: the program's stdout goes to stderr" in run.stderr
    to_file = _torchlint_run("prog.py", "--output-format", "json", "-o", "r.json", cwd=tmp_path)
    assert to_file.stdout.startswith(b"to stdout 2.0\n")
    assert json.loads((tmp_path / "r.json").read_text())["outcome"]["status"] == "completed"


def test_the_traceback_is_pythons_byte_for_byte_and_torchlints_note_follows(tmp_path):
    (tmp_path / "prog.py").write_text(BACKWARD_FAILS)
    plain = _python("prog.py", cwd=tmp_path)
    run = _torchlint_run("prog.py", "-o", "report.txt", cwd=tmp_path)
    assert plain.returncode == run.returncode == 1
    assert b"which is output 0 of Sigmoid" in plain.stderr
    assert _without_our_lines(run.stderr) == plain.stderr
    ours = [line for line in run.stderr.decode().splitlines() if line.startswith("torchlint: ")]
    assert "torchlint: the tensor was modified in place at prog.py:5" in ours
    assert "TL103 [confirmed]" in (tmp_path / "report.txt").read_text()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pty semantics checked on Linux")
def test_a_terminal_stays_a_terminal(tmp_path):
    import pty

    (tmp_path / "prog.py").write_text(STREAMS)
    master, slave = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "torchlint", "run", "prog.py", "-o", "report.txt"], cwd=tmp_path,
                               stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    os.write(master, b"typed\n\x04")  # a line, then end of input, as a user's Ctrl-D
    output = bytearray()
    deadline = time.monotonic() + 180
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every holder of the pty's other end closed it
                    break
                if not chunk:
                    break
                output += chunk
            elif process.poll() is not None:
                break
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        os.close(master)
    shown = bytes(output).replace(b"\r\n", b"\n")
    assert process.returncode == 0, shown.decode()[-3000:]
    assert b"ttys: True True True" in shown, shown.decode()[-3000:]
    assert b"read: 'typed\\n'" in shown


def test_no_probe_causes_a_deprecation_or_future_warning_in_a_training_step(tmp_path):
    (tmp_path / "train.py").write_text(TRAINING_STEP)
    strict = {"PYTHONWARNINGS": "error::DeprecationWarning,error::FutureWarning"}
    plain = _python("train.py", cwd=tmp_path, env=strict)
    assert plain.returncode == 0, plain.stderr.decode()[-3000:]
    run = _torchlint_run("train.py", "--output-format", "json", "--watch-steps", "all", cwd=tmp_path, env=strict)
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    findings = json.loads(run.stdout)["findings"]
    assert [f for f in findings if f["code"] in ("TL707", "TL702")] == []
    assert b"Warning" not in _without_our_lines(run.stderr)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ranks report through an abstract socket")
def test_no_probe_causes_a_deprecation_or_future_warning_on_two_ranks():
    example = ROOT / "examples" / "distributed" / "runtime" / "ddp_sampler" / "fixed"
    strict = {"PYTHONWARNINGS": "error::DeprecationWarning,error::FutureWarning"}
    run = _torchlint_run("train.py", "--nproc-per-node", "2", "--output-format", "json", cwd=example, env=strict,
                         timeout=300)
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    assert [f for f in json.loads(run.stdout)["findings"] if f["code"] in ("TL707", "TL702")] == []
    assert b"reduce_op" not in run.stderr


TRAINS_UNTIL_STOPPED = textwrap.dedent("""\
    import sys
    import torch
    import torch.nn.functional as F

    model = torch.nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    step = 0
    try:
        while True:
            optimizer.zero_grad()
            loss = F.cross_entropy(F.softmax(model(torch.randn(8, 4)), dim=1), torch.randint(0, 3, (8,)))
            loss.backward()
            optimizer.step()
            step += 1
            if step == 3:
                print("ready", flush=True)
    except KeyboardInterrupt:
        print("saving a checkpoint on Ctrl-C", flush=True)
        raise
""")


def _start(tmp_path: Path, *args: str) -> subprocess.Popen:
    (tmp_path / "train.py").write_text(TRAINS_UNTIL_STOPPED)
    return subprocess.Popen([sys.executable, "-m", "torchlint", "run", "train.py", "--watch-steps", "all",
                             "--output-format", "json", "-o", "report.json", *args], cwd=tmp_path,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _when_ready(process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], 1.0)
        if ready and b"ready" in process.stdout.readline():
            return
        assert process.poll() is None, process.stderr.read().decode()[-3000:]
    raise AssertionError("the program never got to its third step")


def _ended(process: subprocess.Popen) -> tuple[bytes, bytes]:
    try:
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    return out, err


def test_the_first_ctrl_c_is_the_programs_and_the_report_keeps_what_was_found(tmp_path):
    import signal

    process = _start(tmp_path)
    _when_ready(process)
    process.send_signal(signal.SIGINT)  # what a terminal's Ctrl-C sends to torchlint run
    out, err = _ended(process)
    assert process.returncode == 128 + signal.SIGINT, err.decode()[-3000:]  # python's own: died of SIGINT
    assert b"saving a checkpoint on Ctrl-C" in out  # the program's handler ran, as under python
    assert b"KeyboardInterrupt" in err
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["outcome"]["status"] == "raised"
    assert "TL101" in {f["code"] for f in report["findings"] if f["status"] == "confirmed"}


def test_sigterm_stops_the_run_and_the_report_keeps_what_was_found(tmp_path):
    import signal

    process = _start(tmp_path)
    _when_ready(process)
    process.send_signal(signal.SIGTERM)
    _, err = _ended(process)
    assert process.returncode == 128 + signal.SIGTERM, err.decode()[-3000:]
    assert b"torchlint: stopped by SIGTERM" in err
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["outcome"]["status"] == "interrupted"
    assert "stopped by SIGTERM" in report["outcome"]["summary"]
    assert "TL101" in {f["code"] for f in report["findings"] if f["status"] == "confirmed"}


def test_a_program_that_closes_its_stdout_and_stderr_keeps_the_report(tmp_path):
    (tmp_path / "train.py").write_text(textwrap.dedent("""\
        import os
        import torch
        import torch.nn.functional as F

        loss = F.cross_entropy(F.softmax(torch.randn(4, 3), dim=1), torch.tensor([0, 1, 2, 0]))
        os.close(1)
        os.close(2)
        raise RuntimeError("after closing both")
    """))
    run = _torchlint_run("train.py", cwd=tmp_path)
    assert run.returncode == 1, run.stderr.decode()[-3000:]  # the program's own status: it raised
    assert b"torchlint run train.py --device cpu: raised RuntimeError at train.py:8" in run.stderr
    assert b"TL101 [confirmed]" in run.stderr
