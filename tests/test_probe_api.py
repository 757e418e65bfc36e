"""`torchlint.probe` is the probe author's one module; the built-in probes keep to it.

The modules under ``torchlint.runtime`` are the engine's and may move; a probe plugin that imports
them breaks when they do. The built-in probes are written the way a third party's must be.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBES = ROOT / "plugins" / "probes"


def imported_modules(path: Path, package: str) -> list[tuple[int, str]]:
    """Every module `path` imports, at any depth (function-level imports included), with
    relative imports resolved against `package`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def test_built_in_probes_import_only_the_public_probe_module():
    offending = []
    for path in sorted(PROBES.rglob("*.py")):
        rel = path.relative_to(ROOT / "plugins").with_suffix("")
        parts = ["torchlint", "plugins", *rel.parts]
        package = ".".join(parts[:-1] if parts[-1] != "__init__" else parts[:-1])
        for line, module in imported_modules(path, package):
            if module == "torchlint.runtime" or module.startswith("torchlint.runtime."):
                offending.append(f"{path.relative_to(ROOT)}:{line}: {module}")
    assert not offending, "import these from torchlint.probe instead:\n" + "\n".join(offending)


def test_the_check_catches_a_runtime_import(tmp_path):
    sample = tmp_path / "probe.py"
    sample.write_text("def f():\n    from torchlint.runtime.frames import Site\nfrom ....runtime import probing\n")
    modules = [module for _, module in imported_modules(sample, "torchlint.plugins.probes.acme")]
    assert "torchlint.runtime.frames" in modules and "torchlint.runtime.probing" in modules


def test_importing_the_probe_module_loads_neither_torch_nor_the_runtime():
    # A probe plugin's __init__ is loaded by `torchlint check`, which never imports torch.
    code = (
        "import sys\n"
        "from torchlint.probe import RuntimeRule, RunSection, e, where\n"
        "print('torch' in sys.modules, 'torchlint.runtime.child.probing' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["False", "False"], result.stdout + result.stderr


def test_an_unknown_name_is_an_attribute_error():
    import torchlint.probe

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        torchlint.probe.Nope  # noqa: B018


def test_every_public_name_resolves_to_its_runtime_definition():
    pytest.importorskip("torch")
    import importlib

    import torchlint.probe as api

    for name in api.__all__:
        value = getattr(api, name)
        assert value is getattr(importlib.import_module(api._HOME[name]), name), name
    assert set(api.__all__) <= set(dir(api))
