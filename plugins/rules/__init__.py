"""The built-in static rules: one module per rule, each defining one ``Rule`` subclass.

Rule modules are found by listing this package, so adding a rule is adding a file.
"""

from __future__ import annotations

import importlib
import pkgutil

from torchlint.pluginmanager import hookimpl
from torchlint.rule import Rule


def _rule_modules():
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        if not info.name.startswith("_"):
            yield importlib.import_module(f"{__name__}.{info.name}")


@hookimpl
def torchlint_rules() -> list[type[Rule]]:
    rules = []
    for module in _rule_modules():
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value.__module__ == module.__name__ and value.code:
                rules.append(value)
    return rules
