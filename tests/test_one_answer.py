"""One answer per file, whatever else is given (issue 27): a file checked alone, as pre-commit
passes its staged files or an editor opens one, gets exactly the findings a check of its
whole project gives it. The rest of its project is read for cross-file facts and project
tokens, and nothing about the rest is reported."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from torchlint.session import open_session
from torchlint.static.engine import StaticEngine

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 300


def engine_and_cache(root: Path, **cli):
    session = open_session(None, root, root, cache_dir=str(root / ".cache"), **cli)
    enabled = session.enabled()
    return StaticEngine(session.config, session.pm, session.rules, enabled), session.cache(enabled)


def answer(findings) -> list[tuple]:
    return sorted((f.code, f.path, f.location.line, f.location.column, f.message) for f in findings)


def by_file(findings) -> dict[str, list[tuple]]:
    out: dict[str, list[tuple]] = {}
    for item in answer(findings):
        out.setdefault(item[1], []).append(item)
    return out


def assert_each_file_alone_agrees(root: Path, files: list[Path]) -> dict[str, list[tuple]]:
    """Check `root` whole, then each file alone (warm cache, as pre-commit after CI), and
    compare each file's findings: code, path, line, column and message."""
    engine, cache = engine_and_cache(root)
    full = by_file(engine.check_paths([root], cwd=root, cache=cache).findings)
    assert full, "the project has no findings: the comparison would prove nothing"
    for path in files:
        display = path.relative_to(root).as_posix()
        alone = engine.check_paths([path], cwd=root, cache=cache)
        assert alone.checked_paths == {display}
        assert answer(alone.findings) == full.get(display, []), display
    return full


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "torchlint", "check", "--output-format", "concise", *args],
        cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT,
    )


def finding_lines(result: subprocess.CompletedProcess) -> list[str]:
    return sorted(line for line in result.stdout.splitlines() if ": TL" in line)


def codes(lines: list[str]) -> list[str]:
    """The rule codes of concise report lines (`path:line:col: CODE message`)."""
    return [line.split(": ", 1)[1].split()[0] for line in lines]


# -- the bundled examples ---------------------------------------------------------------------
@pytest.fixture()
def examples(tmp_path: Path) -> Path:
    """The examples folder as one project (in the repository it is part of torchlint's own)."""
    root = tmp_path / "proj"
    shutil.copytree(REPO / "examples", root / "examples", ignore=shutil.ignore_patterns("*.png", "__pycache__"))
    (root / "pyproject.toml").write_text('[project]\nname = "examples"\n')
    for nested in (root / "examples").glob("*/pyproject.toml"):
        nested.unlink()  # the bundled projects' own markers: here the folder is one project
    return root


@pytest.mark.slow
def test_every_example_file_checked_alone_gets_its_findings_of_the_full_check(examples):
    files = sorted(examples.glob("examples/**/*.py"))
    assert len(files) > 50
    full = assert_each_file_alone_agrees(examples, files)
    # The README's headline: the softmax of models.py reaches the loss of train.py.
    assert any(code == "TL101" for code, *_ in full["examples/buggy_project/train.py"])


def test_the_headline_finding_is_reported_when_only_train_py_is_given(examples):
    train = "examples/buggy_project/train.py"
    result = cli("--no-cache", train, cwd=examples)
    assert result.returncode == 1, result.stderr
    lines = finding_lines(result)
    assert any(line.startswith(f"{train}:18:16: TL101") and "examples/buggy_project/models.py:19" in line for line in lines), lines
    assert all(line.startswith(train) for line in lines), "only the file given is reported"
    assert "1 file checked" in result.stdout + result.stderr
    # Read only the file given, the headline is out of reach: the opt-out works and says why
    # the default reads the rest.
    alone = finding_lines(cli("--no-cache", "--no-project-context", train, cwd=examples))
    assert not any(": TL101 " in line for line in alone), alone


def test_torchlint_run_keeps_to_the_files_its_program_runs(examples):
    """`torchlint run` checks the target and what it imports (a sibling never imported is not
    part of the run): its engine call asks for no project context, and gets none."""
    engine, _ = engine_and_cache(examples)
    train = examples / "examples/buggy_project/train.py"
    alone = engine.check_paths([train], cwd=examples, project_context=False)
    assert "TL101" not in [f.code for f in alone.findings]  # models.py, never given, is not read
    with_models = engine.check_paths([train, train.with_name("models.py")], cwd=examples, project_context=False)
    assert "TL101" in [f.code for f in with_models.findings]


def test_a_project_over_the_bound_is_not_read_and_the_check_says_so(examples, monkeypatch):
    from torchlint.static import project_rest

    monkeypatch.setattr(project_rest, "MAX_PROJECT_FILES", 5)
    engine, cache = engine_and_cache(examples)
    result = engine.check_paths([examples / "examples/buggy_project/train.py"], cwd=examples, cache=cache)
    assert len(result.warnings) == 1 and "more than 5 other files" in result.warnings[0]
    assert "TL101" not in [f.code for f in result.findings]  # checked on its own, as said


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX thing")
def test_a_fifo_named_gitignore_does_not_block_the_walk_of_the_project(project):
    """Checking one file walks its whole project now: a FIFO where a .gitignore would be (a
    tree may hold one; a cache folder's own .gitignore is in the tree) is no .gitignore."""
    (project / "junk").mkdir()
    os.mkfifo(project / "junk" / ".gitignore")
    result = cli("--no-cache", "scripts/evaluate.py", cwd=project)  # bounded by TIMEOUT
    assert codes(finding_lines(result)) == ["TL301"], result.stderr


# -- a small project with the cross-file facts that moved answers -----------------------------
PROJECT = {
    "pyproject.toml": '[project]\nname = "demo"\ndependencies = ["torch>=2.1"]\n',
    ".gitignore": "scratch/\n",
    "demo/__init__.py": "",
    "demo/models.py": """\
        import torch.nn.functional as F
        from torch import nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = nn.Linear(8, 3)

            def forward(self, x):
                return F.softmax(self.head(x), dim=1)
        """,
    "demo/train.py": """\
        import torch
        from torch import nn

        from .models import Net


        def step(x, y):
            model = Net()
            criterion = nn.CrossEntropyLoss()
            loss = criterion(model(x), y)
            loss.backward()


        def resume(path):
            return torch.load(path)


        def warm_start(path):
            return torch.load(path, map_location="cpu", weights_only=True)  # maps its loads: TL301's part
        """,
    # The only file that names an accelerator: it makes the project's checkpoints CUDA ones
    # (TL301, not TL302, for `torch.load` anywhere in the project).
    "demo/device.py": """\
        import torch

        DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
        """,
    "scripts/evaluate.py": """\
        import torch


        def load(path):
            return torch.load(path)


        def load_for_cpu(path):
            return torch.load(path, map_location="cpu", weights_only=True)
        """,
    # Ignored by git: not part of the project, so its `models` must not count.
    "scratch/models.py": "import torch\nprint(torch.cuda.is_available())\n",
    # Its own project: its module named `models` and its accelerator are not demo's.
    "vendor/other/pyproject.toml": '[project]\nname = "other"\ndependencies = ["torch>=2.1"]\n',  # TL302 applies
    "vendor/other/models.py": """\
        from torch import nn


        class Net(nn.Module):
            def forward(self, x):
                return x.softmax(1)
        """,
    # `models` is no module of demo's (vendor/other's is another project's): nothing is known
    # of this Net, whether or not vendor/other is checked in the same run.
    "scripts/predict.py": """\
        import torch.nn.functional as F

        from models import Net


        def loss(x, y):
            return F.cross_entropy(Net()(x), y)
        """,
    "vendor/other/serve.py": """\
        import torch

        from models import Net


        def load(path):
            return torch.load(path)
        """,
}


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    root = tmp_path / "demo_project"
    for name, text in PROJECT.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_each_file_of_a_multi_file_project_checked_alone_agrees(project):
    files = sorted(p for p in project.rglob("*.py") if "scratch" not in p.parts and ".cache" not in p.parts)
    full = assert_each_file_alone_agrees(project, files)
    assert [code for code, *_ in full["demo/train.py"]] == ["TL101", "TL301"]
    assert [code for code, *_ in full["scripts/evaluate.py"]] == ["TL301"]
    # vendor/other is its own project and names no accelerator: TL302 there, not TL301.
    assert [code for code, *_ in full["vendor/other/serve.py"]] == ["TL302"]


def test_a_subfolder_or_a_nested_project_given_alone_agrees(project):
    engine, cache = engine_and_cache(project)
    full = answer(engine.check_paths([project], cwd=project, cache=cache).findings)
    for folder in ("demo", "scripts", "vendor/other", "vendor"):
        given = answer(engine.check_paths([project / folder], cwd=project, cache=cache).findings)
        assert given == [f for f in full if f[1].startswith(folder + "/")], folder


def test_stdin_is_checked_against_the_rest_of_its_files_project(project):
    source = (project / "scripts/evaluate.py").read_text()
    result = subprocess.run(
        [sys.executable, "-m", "torchlint", "check", "--no-cache", "--output-format", "concise", "--stdin-filename", "scripts/evaluate.py"],
        cwd=project, input=source, capture_output=True, text=True, timeout=TIMEOUT,
    )
    assert codes(finding_lines(result)) == ["TL301"], result.stdout + result.stderr


def test_a_baseline_written_by_the_full_check_suppresses_exactly_when_one_file_is_checked(project):
    written = cli("--no-cache", "--write-baseline", "baseline.json", ".", cwd=project)
    assert written.returncode == 0, written.stderr
    entries = json.loads((project / "baseline.json").read_text())
    assert entries  # the full check's findings, recorded
    alone = cli("--no-cache", "--baseline", "baseline.json", "--fail-on-stale-baseline", "demo/train.py", cwd=project)
    assert alone.returncode == 0, alone.stdout + alone.stderr
    assert "(2 suppressed by baseline)" in alone.stdout + alone.stderr
    # A new finding in the given file is still reported.
    train = project / "demo/train.py"
    train.write_text(train.read_text() + "\n\ndef again(path):\n    return torch.load(path)\n")
    again = cli("--no-cache", "--baseline", "baseline.json", "demo/train.py", cwd=project)
    assert again.returncode == 1
    assert codes(finding_lines(again)) == ["TL301"]


def test_statistics_and_exit_code_are_about_the_files_given(project):
    result = cli("--no-cache", "--statistics", "--output-format", "json", "scripts/evaluate.py", cwd=project)
    assert result.returncode == 1
    counts = {item["code"]: item["count"] for item in json.loads(result.stdout)}
    assert counts == {"TL301": 1}  # not demo/train.py's TL101 and TL301
    clean = cli("--no-cache", "demo/models.py", cwd=project)
    assert clean.returncode == 0, clean.stdout  # TL101 is train.py's, reported with train.py


# -- pre-commit: the hook's invocation, and pre-commit itself ---------------------------------
def git(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=60)


@pytest.fixture()
def repository(project: Path) -> Path:
    """`project` as a git repository with everything committed."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    git("init", "-q", cwd=project)
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "add", ".", cwd=project)
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "start", cwd=project)
    return project


def test_the_hook_invocation_on_staged_files_agrees_with_the_full_check(repository):
    """The manifest's entry (`torchlint check --force-exclude`) on the staged files gives
    each the findings `check .` gives it, whichever subset is staged."""
    manifest = (REPO / ".pre-commit-hooks.yaml").read_text()
    assert "entry: torchlint check --force-exclude" in manifest
    full = finding_lines(cli(".", cwd=repository))
    for staged in (["demo/train.py"], ["demo/models.py", "scripts/evaluate.py"], ["vendor/other/serve.py"]):
        hook = finding_lines(cli("--force-exclude", *staged, cwd=repository))
        assert hook == [line for line in full if line.split(":")[0] in staged], staged


@pytest.mark.slow
def test_pre_commit_with_only_train_py_staged_reports_the_cross_file_finding_and_honours_the_baseline(repository, tmp_path):
    pre_commit = Path(sys.executable).with_name("pre-commit")
    if not pre_commit.exists():
        pytest.skip("pre-commit is not installed (pip install -e '.[dev]')")
    config = textwrap.dedent(
        """\
        repos:
          - repo: local
            hooks:
              - id: torchlint
                name: torchlint
                entry: torchlint check --force-exclude
                language: system
                types_or: [python, pyi, jupyter]
                require_serial: true
        """
    )
    (repository / ".pre-commit-config.yaml").write_text(config)
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    train = repository / "demo/train.py"
    train.write_text(train.read_text() + "\n# touched\n")
    git("add", ".pre-commit-config.yaml", "demo/train.py", cwd=repository)

    def run_hook() -> subprocess.CompletedProcess:
        return subprocess.run([str(pre_commit), "run"], cwd=repository, env=env, capture_output=True, text=True, timeout=900)

    result = run_hook()
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "demo/train.py:10:12: TL101" in output  # the softmax is in the committed models.py
    assert "demo/train.py:15:12: TL301" in output  # device.py, not staged, names cuda
    assert "models.py:" not in output.replace("demo/models.py:11", "")  # only staged files reported

    # A baseline written by a full check matches what the hook reports: the commit goes through.
    baseline = cli("--write-baseline", "baseline.json", ".", cwd=repository)
    assert baseline.returncode == 0, baseline.stderr
    hooks = config.replace("entry: torchlint check --force-exclude", "entry: torchlint check --force-exclude --baseline baseline.json")
    (repository / ".pre-commit-config.yaml").write_text(hooks)
    git("add", ".pre-commit-config.yaml", "baseline.json", cwd=repository)
    passed = run_hook()
    assert passed.returncode == 0, passed.stdout + passed.stderr


# -- the editor --------------------------------------------------------------------------------
@pytest.mark.parametrize("folder, name, expected", [("demo", "demo/train.py", ["TL101", "TL301"]), ("scripts", "scripts/evaluate.py", ["TL301"])])
def test_the_language_server_agrees_with_the_command_line_for_a_file_opened_alone(project, folder, name, expected):
    """An editor opened on a subfolder of the project: the document is checked against the
    whole project on disk, as `torchlint check FILE` is (scripts/evaluate.py's TL301 needs
    demo/device.py, outside the editor's folder, to know the project uses CUDA)."""
    pytest.importorskip("pygls")
    from torchlint.lsp.linting import LintWorkspace, path_key

    document = project / name
    workspace = LintWorkspace([project / folder])
    found = workspace.check({path_key(document): document.read_text()}).findings[path_key(document)]
    engine, cache = engine_and_cache(project)
    expected_findings = engine.check_paths([document], cwd=project, cache=cache).findings
    assert answer(found) == answer(expected_findings)
    assert [f.code for f in found] == expected


def test_an_import_resolves_only_within_the_importers_project():
    """`import models` in one project never means another project's models.py, so a check
    that holds both projects resolves it as a check of the importer's project alone does."""
    from torchlint.static.context import ProjectContext

    roots = {"app/train.py": "/p", "app/util.py": "/p", "vendor/other/models.py": "/p/vendor/other", "lib/models.py": "/p"}
    names = {"app/train.py": "train", "app/util.py": "util", "vendor/other/models.py": "models"}
    project = ProjectContext(facts={}, module_names=names, roots=roots)
    assert project.resolve_module("app/train.py", "models") is None
    assert project.resolve_module("app/train.py", "util") == "app/util.py"
    # Within its project a unique module is found as before, wherever it lies.
    project = ProjectContext(facts={}, module_names={**names, "lib/models.py": "models"}, roots=roots)
    assert project.resolve_module("app/train.py", "models") == "lib/models.py"
