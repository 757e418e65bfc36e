"""What a pre-commit run on files no rule cares about costs: libcst must not even load."""

from __future__ import annotations

import subprocess
import sys


def check_and_report_libcst(folder, file_name: str) -> tuple[str, str]:
    """Run `torchlint check file_name` in a fresh interpreter; return whether libcst was
    loaded ("LIBCST <exit code>" or "NO_LIBCST <exit code>") and everything printed."""
    probe = (
        "import sys, runpy\n"
        f"sys.argv = ['torchlint', 'check', '--no-cache', '-q', {file_name!r}]\n"
        "try:\n"
        "    runpy.run_module('torchlint', run_name='__main__')\n"
        "except SystemExit as exit:\n"
        "    code = exit.code\n"
        "from torchlint.lazy import is_loaded\n"
        "print('LIBCST' if is_loaded('libcst') or 'libcst._nodes.base' in sys.modules else 'NO_LIBCST', code)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=folder, capture_output=True, text=True, timeout=120)
    return result.stdout.strip().splitlines()[-1], result.stdout + result.stderr


def test_no_libcst_when_nothing_needs_parsing(tmp_path):
    (tmp_path / "setup_helpers.py").write_text("import os\n\nprint(os.getcwd())\n")
    verdict, output = check_and_report_libcst(tmp_path, "setup_helpers.py")
    assert verdict == "NO_LIBCST 0", output

GENERIC_HELPER = """\
import json
import numpy as np


def load_checkpoint_settings(path, value=None, expand=False):
    \"\"\"Normalize, embed and benchmark the settings.\"\"\"
    try:
        with open(path) as handle:
            settings = json.load(handle)
    except OSError:
        settings = {}
    for index in range(3):
        settings["norm"] = np.log(1 + index) if expand else value
    return np.zeros(3), np.ones(2), np.full(2, 0.5), np.empty(1), np.eye(2), settings
"""


def test_a_file_that_never_names_torch_is_not_parsed_for_torch_only_rules(tmp_path):
    """"load", "norm", "range", "zeros", "value" (`lu`), "except" (`exp`) are everywhere; the
    rules they trigger can only report calls that resolve to torch, and this file never
    imports it."""
    (tmp_path / "setup_helpers.py").write_text(GENERIC_HELPER)
    verdict, output = check_and_report_libcst(tmp_path, "setup_helpers.py")
    assert verdict == "NO_LIBCST 0", output
    # The same file importing torch is parsed, and the rules find what they should.
    (tmp_path / "requirements.txt").write_text("torch>=2.1\n")  # where a bare load unpickles anything
    (tmp_path / "setup_helpers.py").write_text("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n" + GENERIC_HELPER + "state = torch.load(p)\n")
    verdict, output = check_and_report_libcst(tmp_path, "setup_helpers.py")
    # one finding for the bare load: TL301's, naming TL302's weights_only too
    assert verdict == "LIBCST 1" and "TL301" in output and "weights_only" in output, output


def test_check_does_not_import_the_language_server(tmp_path):
    """pygls and lsprotocol (a third of a second to import) belong to `torchlint server` only."""
    (tmp_path / "train.py").write_text("import torch\nstate = torch.load(p)\n")
    (tmp_path / "requirements.txt").write_text("torch>=2.1\n")  # where a bare load unpickles anything
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['torchlint', 'check', '--no-cache', '-q', 'train.py']\n"
        "try:\n"
        "    runpy.run_module('torchlint', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol', 'cattrs')))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "TL302" in result.stdout, result.stdout + result.stderr  # it did check the file
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout + result.stderr
