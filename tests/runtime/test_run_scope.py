"""`torchlint run` checks and reports the target, the files it imports, and the files the run
imported; a sibling script it never uses is neither read nor reported."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conftest import torchlint_run
from torchlint.static.import_closure import import_closure

UNUSED_LOAD = """
import torch

def restore(path):
    return torch.load(path)
"""

PROJECT = {
    "requirements.txt": "torch>=2.1\n",  # where a bare torch.load unpickles anything (TL302)
    "train.py": """
        import importlib
        import torch
        from models import Net
        from pkg import helpers
        import pkg.deep.layers

        net = Net()
        plugin = importlib.import_module("plugin_" + "loss")
        print(helpers.scale(torch.ones(2)), plugin.NAME)
        torch.load("missing.pt")  # the program's own error, not a probe crash
    """,
    "models.py": UNUSED_LOAD + "\nfrom torch import nn\n\nclass Net(nn.Module):\n    pass\n",
    "pkg/__init__.py": "",
    "pkg/helpers.py": "from .scaling import FACTOR\n\ndef scale(x):\n    return x * FACTOR\n",
    "pkg/scaling.py": "FACTOR = 2\n",
    "pkg/deep/__init__.py": "from . import layers\n",
    "pkg/deep/layers.py": "from .. import scaling\n",
    "plugin_loss.py": UNUSED_LOAD + "\nNAME = 'loss'\n",
    "sibling.py": UNUSED_LOAD,
    "broken_sibling.py": "def (\n",
    "pkg/unused.py": UNUSED_LOAD,
}


def make_project(root: Path) -> Path:
    for name, text in PROJECT.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root / "train.py"


def test_the_static_import_closure(tmp_path):
    closure = import_closure(make_project(tmp_path), [tmp_path])
    assert sorted(str(p.relative_to(tmp_path)) for p in closure) == [
        "models.py", "pkg/__init__.py", "pkg/deep/__init__.py", "pkg/deep/layers.py", "pkg/helpers.py", "pkg/scaling.py",
        "train.py"]


@pytest.mark.slow
def test_the_report_covers_what_the_target_imports_and_nothing_else(tmp_path):
    pytest.importorskip("torch")
    make_project(tmp_path)
    result = torchlint_run("train.py", "--output-format", "json", cwd=tmp_path, timeout=120)
    reported = {(f["filename"].rsplit("/", 1)[-1], f["code"]) for f in result.findings()}
    # models.py statically, plugin_loss.py because the run imported it; no sibling, no TL000 for the broken one
    assert reported == {("models.py", "TL302"), ("plugin_loss.py", "TL302"), ("train.py", "TL302"), ("train.py", "TL702")}, \
        result.stdout
    assert "static check: 2 finding(s) in 7 file(s): train.py and the files it imports" in result.stderr
    assert "static check: 3 finding(s) in 8 file(s): train.py, its imports and 1 more file(s) the run imported" in result.stderr
    (crash,) = result.findings("runtime only")
    assert crash["code"] == "TL702" and "FileNotFoundError" in crash["message"]


def test_listing_the_runs_imports_leaves_a_lazily_imported_module_unexecuted(tmp_path, monkeypatch):
    """The child lists the user's files among sys.modules; libcst, which torchlint imports
    lazily and the child never uses, must not be executed by the listing (0.2 CPU-s a run)."""
    import importlib.util
    import sys

    from torchlint import lazy
    from torchlint.runtime.child.imported_files import imported_files
    from torchlint.runtime.frames import FrameClassifier

    user_module = tmp_path / "users_module.py"
    user_module.write_text("")
    spec = importlib.util.spec_from_file_location("users_module", user_module)
    monkeypatch.setitem(sys.modules, "users_module", importlib.util.module_from_spec(spec))
    stand_in = lazy._LazyModule("json")  # imported lazily, as libcst is in the child
    monkeypatch.setitem(sys.modules, "json", stand_in)
    files = imported_files(FrameClassifier([]))
    assert str(user_module) in files
    assert sys.modules["json"] is stand_in and not lazy.is_loaded("json")  # listed without being executed
