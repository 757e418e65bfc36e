"""Every package in the source tree is listed for setuptools (a forgotten one only shows up
in a built wheel, after release)."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_declared():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = set(config["tool"]["setuptools"]["packages"])
    found = set()
    for top, name in (("torchlint", "torchlint"), ("plugins", "torchlint.plugins")):
        for init in (ROOT / top).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / top).parts
            found.add(".".join((name, *relative)))
    assert found == declared
