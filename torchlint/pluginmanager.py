"""Builds the pluggy plugin manager: entry points of group ``torchlint``, then config modules.

torchlint's built-in plugins are declared as entry points in its own package metadata,
so they are found by the same mechanism as any third party's.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pluggy

from torchlint import hookspecs
from torchlint.entrypoints import entry_points
from torchlint.lazy import lazy_import

if TYPE_CHECKING:
    from torchlint.rule import Rule

hookimpl = pluggy.HookimplMarker("torchlint")
ENTRY_POINT_GROUP = "torchlint"


class PluginError(Exception):
    """A plugin could not be loaded or provides something invalid."""


class PluginManager(pluggy.PluginManager):
    """pluggy's manager, plus which distribution provided each entry-point plugin."""

    def __init__(self) -> None:
        super().__init__("torchlint")
        #: plugin name -> (project, version) of the distribution that declared it.
        self.distributions: dict[str, tuple[str, str]] = {}

    def load_entry_points(self, group: str) -> None:
        """What pluggy's `load_setuptools_entrypoints` does, without importlib.metadata
        (see torchlint.entrypoints): the first plugin found under a name wins."""
        for entry in entry_points(group):
            if self.get_plugin(entry.name) is not None or self.is_blocked(entry.name):
                continue
            self.register(entry.load(), name=entry.name)
            self.distributions[entry.name] = (entry.project, entry.version)


def make_plugin_manager(config_plugins: tuple[str, ...] = (), project_root: Path | None = None) -> PluginManager:
    lazy_import("libcst")  # rule modules import it at the top; execute it only if a file is parsed
    pm = PluginManager()
    pm.add_hookspecs(hookspecs)
    try:
        pm.load_entry_points(ENTRY_POINT_GROUP)
    except Exception as exc:  # a broken third-party package must not look like our crash
        raise PluginError(f"could not load a plugin from entry points: {exc!r}") from exc
    if config_plugins and project_root is not None and str(project_root) not in sys.path:
        # Searched last: a module installed in the environment (a published plugin, torch,
        # libcst, the standard library, imported lazily later) is never shadowed by a file of
        # the same name in the checked tree; only what is found nowhere else comes from there.
        sys.path.append(str(project_root))
    for module_name in config_plugins:
        if pm.has_plugin(module_name):
            continue
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            raise PluginError(f"plugin {module_name!r} named in configuration could not be imported: {exc}") from exc
        pm.register(module, name=module_name)
    return pm


def collect_rules(pm: pluggy.PluginManager) -> dict[str, type[Rule]]:
    """All rule classes, by code; refuses duplicate codes/names and invalid metadata."""
    rules: dict[str, type[Rule]] = {}
    owners: dict[str, str] = {}
    names: dict[str, str] = {}
    for impl in pm.hook.torchlint_rules.get_hookimpls():
        owner = impl.plugin_name
        for rule in impl.function() or ():
            problems = rule.validate()
            if problems:
                raise PluginError(f"rule {rule.__qualname__} from plugin {owner!r}: " + "; ".join(problems))
            if rule.code in rules and rules[rule.code] is not rule:
                raise PluginError(
                    f"rule code {rule.code} is provided by both {owners[rule.code]!r} and {owner!r}"
                )
            if rule.name in names and names[rule.name] != rule.code:
                raise PluginError(f"rule name {rule.name!r} is used by both {names[rule.name]} and {rule.code}")
            rules[rule.code] = rule
            owners[rule.code] = owner
            names[rule.name] = rule.code
    return dict(sorted(rules.items()))


def rule_registry(pm: pluggy.PluginManager) -> dict[str, type[Rule]]:
    """Every code a run knows, by code: the engines' own (TL0xx, and the run's TL702, TL703
    and TL707) and every plugin's rules, the probes' TL7xx included."""
    from torchlint.runtime.rules import ENGINE_RUNTIME_RULES
    from torchlint.static.engine_rules import ENGINE_RULES

    own = {**ENGINE_RULES, **ENGINE_RUNTIME_RULES}
    plugin_rules = collect_rules(pm)
    clash = set(own) & set(plugin_rules)
    if clash:
        raise PluginError(f"a plugin redefines the engine's own code(s) {sorted(clash)}")
    return dict(sorted({**own, **plugin_rules}.items()))


def plugin_table(pm: PluginManager) -> list[tuple[str, str, list[str]]]:
    """(plugin name, distribution version, hooks implemented) for `torchlint plugins`."""
    versions = {name: f"{project} {version}" for name, (project, version) in pm.distributions.items()}
    table = []
    for name, plugin in sorted(pm.list_name_plugin(), key=lambda item: item[0]):
        hooks = sorted(caller.name for caller in pm.get_hookcallers(plugin) or ())
        table.append((name, versions.get(name, "(config)"), hooks))
    return table
