"""--fix / --unsafe-fixes / --diff / --show-fixes: what is written, and what never is."""

from __future__ import annotations

import os
import stat

import pytest
from click.testing import CliRunner

from torchlint.cli import main

SOURCE = (
    "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n\n\ndef resume(model, path):\n    model.load_state_dict(torch.load(path, weights_only=True))\n"
    "    return torch.load(path, weights_only=True)\n\n\nckpt = torch.load('x.pt', weights_only=True)  # noqa: TL301\n"
)


def run(*args):
    return CliRunner().invoke(main, ["check", "--no-cache", *args], catch_exceptions=False)


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(SOURCE)
    (tmp_path / "clean.py").write_text("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = torch.load(p, map_location='cpu', weights_only=True)\n")
    return tmp_path


def test_diff_writes_nothing_and_exits_1(project):
    result = run("--diff", "--unsafe-fixes", ".")
    assert result.exit_code == 1
    assert "+    model.load_state_dict(torch.load(path, weights_only=True, map_location=\"cpu\"))" in result.output
    assert (project / "a.py").read_text() == SOURCE


def test_fix_applies_safe_fixes_only_unless_asked(project):
    result = run("--fix", "--output-format", "concise", ".")
    assert result.exit_code == 1  # the unsafe one remains
    text = (project / "a.py").read_text()
    assert "load_state_dict(torch.load(path, weights_only=True, map_location=\"cpu\"))" in text
    assert "return torch.load(path, weights_only=True)\n" in text
    assert "ckpt = torch.load('x.pt', weights_only=True)  # noqa: TL301" in text  # suppressed findings are not fixed
    assert run("--fix", "--unsafe-fixes", ".").exit_code == 0
    assert "return torch.load(path, weights_only=True, map_location=\"cpu\")" in (project / "a.py").read_text()


def test_fixing_twice_changes_nothing(project):
    run("--fix", "--unsafe-fixes", ".")
    once = (project / "a.py").read_bytes()
    second = run("--fix", "--unsafe-fixes", "--show-fixes", ".")
    assert (project / "a.py").read_bytes() == once
    assert "fixed:" not in second.output


def test_files_without_fixable_findings_are_not_rewritten(project):
    before = os.stat(project / "clean.py")
    run("--fix", "--unsafe-fixes", ".")
    after = os.stat(project / "clean.py")
    assert (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)


def test_permissions_and_encoding_are_kept(project):
    path = project / "latin.py"
    path.write_bytes(b"# -*- coding: latin-1 -*-\nimport torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nname = '\xe9'\nx = torch.load(p, weights_only=True)\n")
    path.chmod(0o751)
    run("--fix", "--unsafe-fixes", "latin.py")
    assert path.read_bytes() == b"# -*- coding: latin-1 -*-\nimport torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nname = '\xe9'\nx = torch.load(p, weights_only=True, map_location=\"cpu\")\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o751


def test_show_fixes_lists_each_fix(project):
    result = run("--fix", "--unsafe-fixes", "--show-fixes", ".")
    assert "Fixed 2 findings:" in result.output
    assert "  a.py:5: TL301 Add `map_location=\"cpu\"`" in result.output
    assert "  a.py:6: TL301 Add `map_location=\"cpu\"`" in result.output
    assert "2 fixed" in result.output


def test_show_fixes_says_when_nothing_was_fixed(project):
    result = run("--fix", "--show-fixes", "clean.py")
    assert "No fixes applied." in result.output


def test_a_fix_that_breaks_the_file_is_dropped(project, tmp_path):
    from torchlint.fix import SAFE, NodeFix
    from torchlint.fix.runner import fix_findings
    from torchlint.pluginmanager import hookimpl
    from torchlint.rule import Rule

    class Breaker(Rule):
        code = "XX200"
        name = "breaker"
        summary = "offers a fix that is not Python"
        fix_safety = SAFE

        def visit_Call(self, node):
            self.report(node, "broken fix", fix=NodeFix("break it", SAFE, ((node, "torch.load(p, weights_only=True))"),)))

    class Pack:
        @hookimpl
        def torchlint_rules(self):
            return [Breaker]

    (project / "b.py").write_text("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = torch.load(p, weights_only=True)\n")
    from pathlib import Path

    from torchlint.config import Config
    from torchlint.pluginmanager import collect_rules, make_plugin_manager
    from torchlint.static.engine import StaticEngine

    pm = make_plugin_manager()
    pm.register(Pack())
    engine = StaticEngine(Config(root=project), pm, collect_rules(pm), {"XX200"})
    result = engine.check_paths([Path("b.py")], cwd=project)
    outcome = fix_findings(engine, result.findings, unsafe=False, write=True)
    assert (project / "b.py").read_text() == "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = torch.load(p, weights_only=True)\n"
    assert "would produce invalid code" in outcome.files[0].rejected[0].reason


def test_an_interrupted_write_leaves_the_old_file(tmp_path, monkeypatch):
    from torchlint import atomic

    path = tmp_path / "x.py"
    path.write_text("old\n")

    def fail(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "replace", fail)
    with pytest.raises(KeyboardInterrupt):
        atomic.write_atomic(path, "new\n")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["x.py"]


def test_a_fix_that_cannot_be_built_drops_the_fix_not_the_run():
    from torchlint.fix import SAFE, NodeFix
    from torchlint.pluginmanager import hookimpl
    from torchlint.rule import Rule
    from torchlint.testing import check_sources

    class BadFix(Rule):
        code = "XX201"
        name = "bad-fix"
        summary = "a fix whose replacement is not a node"
        fix_safety = SAFE

        def visit_ImportFrom(self, node):
            # Not a node: generating its code raises inside the engine, after the visit.
            self.report(node, "import", fix=NodeFix("rename", SAFE, ((node, object()),)))

    class Pack:
        @hookimpl
        def torchlint_rules(self):
            return [BadFix]

    source = "from torch import (\n    load,\n    save,\n)\n"
    result = check_sources({"a.py": source}, select=["XX201"], extra_plugins=[Pack()])
    assert [(f.code, f.location.line) for f in result.findings] == [("XX201", 1)]


def test_parenthesised_from_import_can_be_replaced():
    import libcst as cst

    from torchlint.fix import SAFE, NodeFix
    from torchlint.fix.apply import apply_fixes
    from torchlint.pluginmanager import hookimpl
    from torchlint.rule import Rule
    from torchlint.testing import check_sources

    class RenameModule(Rule):
        code = "XX202"
        name = "rename-module"
        summary = "functorch -> torch.func"
        fix_safety = SAFE

        def visit_ImportFrom(self, node):
            new = node.with_changes(module=cst.parse_expression("torch.func"))
            self.report(node, "use torch.func", fix=NodeFix("rename", SAFE, ((node, new),)))

    class Pack:
        @hookimpl
        def torchlint_rules(self):
            return [RenameModule]

    source = "from functorch import (\n    vmap,\n    grad,\n)\n"
    result = check_sources({"a.py": source}, select=["XX202"], extra_plugins=[Pack()])
    fixed = apply_fixes(source, [f.fix for f in result.findings]).text
    assert fixed == "from torch.func import (\n    vmap,\n    grad,\n)\n"


def test_one_fix_run_reaches_the_fixed_point_across_rules(tmp_path, monkeypatch, torch_2_5_installed):
    # TL301's safe map_location fix comes first; TL302's weights_only fix only exists once it
    # is applied. ruff applies fixes until nothing changes: so must one `--fix` run.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text('import torch\n\nmodel = Net().to("cuda" if torch.cuda.is_available() else "cpu")\nmodel.load_state_dict(torch.load("m.pt"))\n')
    result = run("--fix", "--unsafe-fixes", "a.py")
    assert 'torch.load("m.pt", map_location="cpu", weights_only=True)' in (tmp_path / "a.py").read_text()
    assert result.exit_code == 0, result.output


def test_fix_says_when_it_stopped_on_the_pass_bound(tmp_path, monkeypatch, torch_2_5_installed):
    import torchlint.fix.runner as runner

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "MAX_PASSES", 1)
    (tmp_path / "a.py").write_text('import torch\n\nmodel = Net().to("cuda" if torch.cuda.is_available() else "cpu")\nmodel.load_state_dict(torch.load("m.pt"))\n')
    result = run("--fix", "--unsafe-fixes", "--output-format", "concise", "a.py")
    assert "stopped there" in result.output and "TL002" in result.output
    assert 'map_location="cpu"' in (tmp_path / "a.py").read_text()
    assert result.exit_code == 1
