"""The pre-commit hook works from this repository, as users will consume it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


@pytest.mark.slow
def test_pre_commit_try_repo(tmp_path):
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs git and a git checkout of torchlint")
    pre_commit = Path(sys.executable).with_name("pre-commit")
    if not pre_commit.exists():
        pytest.skip("pre-commit is not installed (pip install -e '.[dev]')")
    work = tmp_path / "project"
    work.mkdir()
    git("init", "-q", cwd=work)
    (work / "train.py").write_text("import torch  # on cuda\nstate = torch.load('ckpt.pt')\n")
    (work / "ok.py").write_text("import torch  # on cuda\nstate = torch.load('ckpt.pt', map_location='cpu', weights_only=True)\n")
    (work / "notes.txt").write_text("torch.load('x')\n")
    git("add", ".", cwd=work)
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PRE_COMMIT_HOME": str(tmp_path / "cache"),
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    result = subprocess.run(
        [str(pre_commit), "try-repo", str(REPO), "torchlint", "--all-files", "--verbose"],
        cwd=work, env=env, capture_output=True, text=True, timeout=900,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "train.py:2:9: TL301" in output
    assert "ok.py:" not in output
    assert "notes.txt" not in output
