"""The run command's footprint on the rest of the CLI: cheap to import, documented codes."""

from __future__ import annotations

import subprocess
import sys


def test_the_cli_registers_run_without_importing_torch():
    code = (
        "import sys, torchlint.cli as cli; "
        "assert 'run' in cli.main.commands; "
        "import torchlint.pluginmanager as pm; pm.collect_rules(pm.make_plugin_manager()); "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_runtime_only_codes_are_documented_rules():
    result = subprocess.run([sys.executable, "-m", "torchlint", "rule", "TL701"], capture_output=True, text=True)
    assert result.returncode == 0
    assert "runtime-device-mismatch" in result.stdout and "--device fake-cuda" in result.stdout
    table = subprocess.run([sys.executable, "-m", "torchlint", "rules"], capture_output=True, text=True).stdout
    assert all(code in table for code in ("TL701", "TL702", "TL703"))


def test_runtime_rules_never_make_the_static_engine_parse_a_file(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    result = subprocess.run([sys.executable, "-m", "torchlint", "check", "--select", "TL7", "--select", "ALL", str(tmp_path)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
