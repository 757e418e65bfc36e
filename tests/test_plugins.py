"""Third-party rule packs load the way the built-ins do: entry points or `plugins = [...]`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

RULE_PACK = textwrap.dedent(
    '''
    import libcst as cst
    from torchlint import hookimpl
    from torchlint.rule import Bad, Good, Rule


    class NoPrintInForward(Rule):
        """Flags print() in forward."""
        code = "ACME001"
        name = "print-in-forward"
        summary = "print() inside forward"
        triggers = ("print",)
        cases = [Bad("def forward(self, x):\\n    print(x)  # error\\n"), Good("print(1)"), Good("def f():\\n    print(1)\\n")]

        def visit_Call(self, node):
            function = self.ctx.enclosing_function()
            if isinstance(node.func, cst.Name) and node.func.value == "print" and function is not None and function.name.value == "forward":
                self.report(node, "print() in forward runs on every step")


    @hookimpl
    def torchlint_rules():
        return [NoPrintInForward]
    '''
)

TARGET = "class Net:\n    def forward(self, x):\n        print(x.shape)\n        return x\n"


def run_cli(args, cwd, env_extra=None):
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "torchlint", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_rule_pack_from_an_entry_point(tmp_path):
    site = tmp_path / "site"
    (site / "acme_rules").mkdir(parents=True)
    (site / "acme_rules" / "__init__.py").write_text(RULE_PACK)
    dist = site / "acme_rules-1.2.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-rules\nVersion: 1.2\n")
    (dist / "entry_points.txt").write_text("[torchlint]\nacme = acme_rules\n")
    (tmp_path / "model.py").write_text(TARGET)
    env = {"PYTHONPATH": str(site)}

    result = run_cli(["check", "--output-format", "json", "model.py"], tmp_path, env)
    assert result.returncode == 1, result.stderr
    assert [(d["code"], d["location"]["row"]) for d in json.loads(result.stdout)] == [("ACME001", 3)]

    rules = run_cli(["rules"], tmp_path, env).stdout
    assert "ACME001  print-in-forward" in rules and "TL301" in rules
    plugins = run_cli(["plugins"], tmp_path, env).stdout
    assert "acme  (acme-rules 1.2)" in plugins and "torchlint_rules" in plugins
    assert run_cli(["rule", "ACME001"], tmp_path, env).stdout.startswith("# ACME001: print-in-forward")


def test_rule_pack_named_in_config(tmp_path):
    (tmp_path / "local_rules.py").write_text(RULE_PACK)
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nplugins = ["local_rules"]\n')
    (tmp_path / "model.py").write_text(TARGET)
    result = run_cli(["check", "--output-format", "concise", "-q", "model.py"], tmp_path)
    assert result.stdout.strip() == "model.py:3:9: ACME001 print() in forward runs on every step"
    # its own cases pass through the same test helper torchlint's rules use
    sys.path.insert(0, str(tmp_path))
    try:
        import local_rules
        from torchlint.testing import case_failures

        assert case_failures(local_rules.NoPrintInForward, extra_plugins=[local_rules]) == []
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("local_rules", None)


def test_duplicate_code_is_a_config_error(tmp_path):
    clash = RULE_PACK.replace('"ACME001"', '"TL301"')
    (tmp_path / "clash_rules.py").write_text(clash)
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nplugins = ["clash_rules"]\n')
    (tmp_path / "model.py").write_text(TARGET)
    result = run_cli(["check", "model.py"], tmp_path)
    assert result.returncode == 2
    assert "TL301 is provided by both" in result.stderr


def test_invalid_rule_metadata_is_refused(tmp_path):
    bad = RULE_PACK.replace('"print-in-forward"', '"Print In Forward"')
    (tmp_path / "bad_rules.py").write_text(bad)
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nplugins = ["bad_rules"]\n')
    (tmp_path / "model.py").write_text(TARGET)
    result = run_cli(["check", "model.py"], tmp_path)
    assert result.returncode == 2 and "not kebab-case" in result.stderr


def test_static_check_never_imports_torch(tmp_path):
    # A decoy `torch` first on the path makes the test meaningful whether or not the real
    # torch is installed: importing it leaves a mark.
    decoy = tmp_path / "decoy" / "torch"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("import pathlib\npathlib.Path(__file__).with_name('IMPORTED').touch()\n")
    (tmp_path / "train.py").write_text("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = torch.load(p, weights_only=True)\n")
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['torchlint', 'check', '-q', 'train.py']\n"
        "try:\n"
        "    runpy.run_module('torchlint', run_name='__main__')\n"
        "except SystemExit as exit:\n"
        "    code = exit.code\n"
        "print('TORCH_IMPORTED' if 'torch' in sys.modules else 'NO_TORCH', code)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "decoy")}
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.stdout.strip().splitlines()[-1] == "NO_TORCH 1", result.stdout + result.stderr
    assert not (decoy / "IMPORTED").exists()


def test_a_plugin_cannot_take_the_engines_own_codes(tmp_path):
    (tmp_path / "greedy_rules.py").write_text(RULE_PACK.replace('"ACME001"', '"TL000"'))
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nplugins = ["greedy_rules"]\n')
    (tmp_path / "model.py").write_text(TARGET)
    result = run_cli(["check", "model.py"], tmp_path)
    assert result.returncode == 2 and "redefines the engine's own code(s) ['TL000']" in result.stderr


def test_prefilter_metadata_must_be_tuples_of_strings():
    from torchlint.rule import Rule

    class Loose(Rule):
        code, name, summary = "XA907", "loose", "a string where a tuple belongs"
        triggers = "torch"
        imports = ("torch", "")

    problems = Loose.validate()
    assert "triggers must be a tuple of non-empty strings" in problems
    assert "imports must be a tuple of non-empty strings" in problems


def test_a_file_in_the_checked_tree_cannot_stand_in_for_an_installed_module(tmp_path, monkeypatch):
    """The project root is searched for configured plugins after the installed packages: a
    `colorsys.py` (or `libcst.py`, imported lazily later) in the tree is not what gets imported."""
    from click.testing import CliRunner

    from torchlint.cli import main

    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "colorsys.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').write('x')\n")
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nplugins = ["colorsys"]\n')
    (tmp_path / "a.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "a.py"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "ran").exists()
