"""The pre-commit hook works from this repository, as users will consume it, and the
README's snippet works when copied verbatim."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
yaml = pytest.importorskip("yaml")  # pre-commit's own dependency


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=60)


def readme_precommit_configs() -> list[dict]:
    """Every YAML block of the README that is a .pre-commit-config.yaml (holds `repos:`)."""
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    return [config for config in map(yaml.safe_load, blocks) if isinstance(config, dict) and "repos" in config]


def manifest_hooks() -> dict[str, dict]:
    return {hook["id"]: hook for hook in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}


def scratch_project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A git repository with a bug, a clean file and a non-Python file, and the environment
    pre-commit runs in (torchlint and pre-commit from this test's virtual environment)."""
    work = tmp_path / "project"
    work.mkdir()
    git("init", "-q", cwd=work)
    (work / "train.py").write_text("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nstate = torch.load('ckpt.pt')\n")
    (work / "ok.py").write_text("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nstate = torch.load('ckpt.pt', map_location='cpu', weights_only=True)\n")
    (work / "notes.txt").write_text("torch.load('x')\n")
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PRE_COMMIT_HOME": str(tmp_path / "cache"),
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    return work, env


def pre_commit_executable() -> Path:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs git and a git checkout of torchlint")
    pre_commit = Path(sys.executable).with_name("pre-commit")
    if not pre_commit.exists():
        pytest.skip("pre-commit is not installed (pip install -e '.[dev]')")
    return pre_commit


def assert_hook_found_the_bug_only(result: subprocess.CompletedProcess) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "train.py:2:9: TL301" in output
    assert "ok.py:" not in output
    assert "notes.txt" not in output


def test_readme_has_a_precommit_snippet_in_step_with_the_manifest():
    configs = readme_precommit_configs()
    assert configs, "the README shows no .pre-commit-config.yaml"
    manifest = manifest_hooks()
    for config in configs:
        for repo in config["repos"]:
            for hook in repo["hooks"]:
                assert hook["id"] in manifest, hook["id"]
                if repo["repo"] == "local":
                    # A local hook repeats the manifest's definition: it must not drift from it.
                    for key in ("entry", "types_or", "require_serial"):
                        assert hook.get(key) == manifest[hook["id"]].get(key), key


def test_every_rev_in_the_readme_exists_in_this_repository():
    """`rev: v0.1.0` named a tag nobody had made: a copied snippet failed. Any rev shown
    must resolve here (a tag or a commit of this repository)."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs git and a git checkout of torchlint")
    for config in readme_precommit_configs():
        for repo in config["repos"]:
            if "rev" in repo:
                resolved = subprocess.run(
                    ["git", "rev-parse", "--verify", "--quiet", f"{repo['rev']}^{{commit}}"],
                    cwd=REPO, capture_output=True, text=True, timeout=30,
                )
                assert resolved.returncode == 0, f"rev {repo['rev']!r} is not a tag or commit of this repository"


@pytest.mark.slow
def test_readme_precommit_snippet_works_when_copied(tmp_path):
    pre_commit = pre_commit_executable()
    work, env = scratch_project(tmp_path)
    for config in readme_precommit_configs():
        (work / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
        git("add", ".", cwd=work)
        result = subprocess.run(
            [str(pre_commit), "run", "--all-files"], cwd=work, env=env, capture_output=True, text=True, timeout=900,
        )
        assert_hook_found_the_bug_only(result)


@pytest.mark.slow
def test_pre_commit_try_repo(tmp_path):
    """The remote form (`repo:` a git URL of torchlint, `rev:` a commit of it): pre-commit
    installs torchlint from the repository at that commit and runs the manifest's hook."""
    pre_commit = pre_commit_executable()
    work, env = scratch_project(tmp_path)
    git("add", ".", cwd=work)
    head = git("rev-parse", "HEAD", cwd=REPO).stdout.strip()
    result = subprocess.run(
        [str(pre_commit), "try-repo", str(REPO), "torchlint", "--ref", head, "--all-files", "--verbose"],
        cwd=work, env=env, capture_output=True, text=True, timeout=900,
    )
    assert_hook_found_the_bug_only(result)
