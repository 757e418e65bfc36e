"""A target that wrecks torchlint's evidence channel must not turn into a clean "completed" run.

Each target gets a private TMPDIR, so deleting "every temp folder" deletes only its own run's.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

pytest.importorskip("torch")

from conftest import torchlint_run  # noqa: E402

pytestmark = pytest.mark.slow

LOSS_ON_SOFTMAX = """
import torch
import torch.nn.functional as F
x = torch.randn(4, 3)
loss = F.cross_entropy(F.softmax(x, dim=1), torch.tensor([0, 1, 2, 0]))
"""


def _private_tmp(tmp_path):
    folder = tmp_path / "tmp"
    folder.mkdir()
    return folder, {"TMPDIR": str(folder)}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the target walks /proc/self/fd")
def test_evidence_survives_a_target_that_deletes_temp_folders_and_hijacks_descriptors(write, tmp_path):
    folder, env = _private_tmp(tmp_path)
    write("train.py", textwrap.dedent("""
        import os, shutil, tempfile
        # 1. delete everything in the temp folder (torchlint's run folder, if it had one)
        for name in os.listdir(tempfile.gettempdir()):
            path = os.path.join(tempfile.gettempdir(), name)
            shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else os.unlink(path)
        # 2. point every inherited descriptor at our own file (what a reused number would do)
        mine = os.open("mine.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        for name in os.listdir("/proc/self/fd"):
            if int(name) > 2 and int(name) != mine:
                try:
                    os.dup2(mine, int(name), inheritable=False)
                except OSError:
                    pass
        os.write(mine, b"user data 1\\n")
        # 3. and then close every descriptor above stderr, our own file included
        import resource
        os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        with open("mine.txt", "a") as stream:
            stream.write("user data 2\\n")
    """) + LOSS_ON_SOFTMAX)
    result = torchlint_run("train.py", "-q", "--output-format", "json", cwd=tmp_path, env=env)
    assert (tmp_path / "mine.txt").read_text() == "user data 1\nuser data 2\n"  # no torchlint event in the user's file
    assert result.report["outcome"]["status"] == "completed", result.stderr
    by_code = {f["code"]: f for f in result.findings()}
    assert by_code["TL101"]["status"] == "confirmed"  # evidence gathered after both attacks still arrived
    assert result.returncode == 1


def test_a_target_that_deletes_the_run_folder_still_has_its_exit_status_reported(write, tmp_path):
    folder, env = _private_tmp(tmp_path)
    write("train.py", textwrap.dedent("""
        import os, shutil, tempfile
        for name in os.listdir(tempfile.gettempdir()):
            shutil.rmtree(os.path.join(tempfile.gettempdir(), name), ignore_errors=True)
    """) + LOSS_ON_SOFTMAX + "raise SystemExit(5)\n")
    result = torchlint_run("train.py", "-q", "--output-format", "json", cwd=tmp_path, env=env)
    assert result.report["outcome"]["status"] == "exited"
    assert result.returncode == 5  # the program's own status
    by_code = {f["code"]: f for f in result.findings()}
    assert "sys.exit(5)" in by_code["TL702"]["message"]
    assert by_code["TL101"]["status"] == "confirmed"
    assert list(folder.iterdir()) == []  # and torchlint left nothing there either


def test_os_exit_zero_mid_run_is_not_a_completed_run(write, tmp_path):
    write("train.py", LOSS_ON_SOFTMAX + "import os\nos._exit(0)\nprint('never')\n")
    result = torchlint_run("train.py", "-q", "--output-format", "json", cwd=tmp_path)
    outcome = result.report["outcome"]
    assert outcome["status"] != "completed"
    assert result.returncode == 1
    by_code = {f["code"]: f for f in result.findings()}
    assert "without finishing under torchlint" in by_code["TL702"]["message"]
    assert "os._exit(0)" in by_code["TL702"]["message"] and by_code["TL702"]["location"]["row"] == 6
    assert by_code["TL101"]["status"] == "confirmed"  # what was gathered before it is kept
