"""The semantic model is the engine's: rules ask it questions, it never reaches into them."""

from __future__ import annotations

import ast
from pathlib import Path

import torchlint.semantic

SEMANTIC = Path(torchlint.semantic.__file__).parent


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            # a relative import inside torchlint/semantic stays inside torchlint
            found.add(("." * node.level) + (node.module or ""))
    return found


def test_semantic_modules_never_import_plugins():
    offenders = {
        f"{path.name}: {module}"
        for path in sorted(SEMANTIC.glob("*.py"))
        for module in imported_modules(path)
        if module.startswith(("torchlint.plugins", "plugins")) or module.startswith("..plugins")
    }
    assert offenders == set()


def test_the_check_sees_the_modules_that_moved_here():
    # the autograd questions TL103 asks live here now: the check above reads them
    names = {path.name for path in SEMANTIC.glob("*.py")}
    assert {"autograd.py", "grad_mode.py", "model.py"} <= names
