"""What a pre-commit run on files no rule cares about costs: libcst must not even load."""

from __future__ import annotations

import subprocess
import sys


def test_no_libcst_when_nothing_needs_parsing(tmp_path):
    (tmp_path / "setup_helpers.py").write_text("import os\n\nprint(os.getcwd())\n")
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['torchlint', 'check', '--no-cache', '-q', 'setup_helpers.py']\n"
        "try:\n"
        "    runpy.run_module('torchlint', run_name='__main__')\n"
        "except SystemExit as exit:\n"
        "    code = exit.code\n"
        "from torchlint.lazy import is_loaded\n"
        "print('LIBCST' if is_loaded('libcst') or 'libcst._nodes.base' in sys.modules else 'NO_LIBCST', code)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.stdout.strip().splitlines()[-1] == "NO_LIBCST 0", result.stdout + result.stderr
