"""Everything a command needs before it checks anything: config, plugins, rules, selection."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from torchlint.config import Config, ConfigError, find_config_file, load_config
from torchlint.pluginmanager import make_plugin_manager, rule_registry
from torchlint.selection import codes_for, resolve

if TYPE_CHECKING:
    from torchlint.pluginmanager import PluginManager
    from torchlint.rule import Rule


@dataclass
class Session:
    config: Config
    pm: PluginManager
    rules: dict[str, type[Rule]]

    def enabled(self) -> set[str]:
        return resolve(self.rules, self.config.select, self.config.extend_select, self.config.ignore, where=self.config.origin)

    def proof_only(self, enabled: set[str]) -> set[str]:
        """The rules `torchlint run` checks beyond `enabled`, reporting a finding of theirs only
        where the run proves it: those off by default because their static precision is low,
        which the program's own crash or a probe can settle. An explicit `select` is the
        user's word on what runs, and an ignored rule stays off."""
        if self.config.select is not None:
            return set()
        ignored = codes_for(self.config.ignore, self.rules, where=f"{self.config.origin} ignore")
        return {code for code, rule in self.rules.items() if not rule.default_enabled} - enabled - ignored

    def fixable(self) -> set[str]:
        """The rules whose fixes may be applied: `fixable` (every rule unless given), plus
        `extend-fixable`, less `unfixable`."""
        config, where = self.config, self.config.origin
        allowed = set(self.rules) if config.fixable is None else codes_for(config.fixable, self.rules, where=f"{where} fixable")
        allowed |= codes_for(config.extend_fixable, self.rules, where=f"{where} extend-fixable")
        return allowed - codes_for(config.unfixable, self.rules, where=f"{where} unfixable")

    def cache(self, enabled: set[str]):
        """The cache for this configuration and rule set."""
        import sys

        from torchlint.static.cache import Cache, code_fingerprint

        source_dirs = {Path(__file__).resolve().parent}
        for code in enabled:
            module = sys.modules.get(self.rules[code].__module__)
            if module is not None and getattr(module, "__file__", None):
                source_dirs.add(Path(module.__file__).resolve().parent)
        versions = sorted({f"{project}=={version}" for project, version in self.pm.distributions.values()})
        fingerprint = Cache.fingerprint(
            {
                "enabled": sorted(enabled),
                "plugins": versions,
                "code": code_fingerprint(sorted(source_dirs)),
                "target_torch": self.config.target_torch,
                "assumed_torch": self.config.assumed_torch,
                "plugin_options": self.config.plugin_tables,
            }
        )
        return Cache(self.config.cache_folder, fingerprint)

    def output_formats(self) -> list[str]:
        names: list[str] = []
        for formats in self.pm.hook.torchlint_output_formats():
            names.extend(name for name in formats if name not in names)
        return names


def _check_plugin_tables(config, pm) -> None:
    """`[tool.torchlint.<name>]` must name a loaded plugin: a misspelt table would be ignored."""
    names = {name for name, _ in pm.list_name_plugin() if name}
    # a module plugin `pkg.rules` may name its table after the package or the module
    accepted = names | {name.split(".")[0] for name in names} | {name.rsplit(".", 1)[-1] for name in names}
    unknown = sorted(set(config.plugin_tables) - accepted)
    if unknown:
        tables = ", ".join(f"[tool.torchlint.{name}]" for name in unknown)
        known = ", ".join(sorted(n for n in names if not n.startswith("_") and "." not in n)) or "none"
        raise ConfigError(f"{config.origin}: {tables} names no plugin (loaded plugins: {known})")


def open_session(
    config_path: Path | None, start: Path, cwd: Path, isolated: bool = False, overrides: list[tuple[str, dict]] = (), **cli
) -> Session:
    """`isolated`: read no configuration file at all (a config's `plugins = [...]` imports
    code from the checked tree, so an untrusted tree must be checked this way); `--config
    KEY=VALUE` overrides still apply, as they are the command line's own."""
    from torchlint.config import with_assumed_torch, with_cli, with_declared_torch

    if isolated and config_path is not None:
        raise ConfigError("--isolated reads no configuration file: drop --config")
    if config_path is not None and not config_path.is_file():
        raise ConfigError(f"{config_path}: no such configuration file")
    config = load_config(None if isolated else config_path or find_config_file(start), cwd=cwd, overrides=overrides)
    config = with_cli(config, **cli)
    if not isolated:
        config = with_declared_torch(config, start)  # a project requiring torch>=2.6 has weights_only=True by default
    config = with_assumed_torch(config)  # what nothing pins: the torch installed here, else the stable one
    pm = make_plugin_manager(config.plugins, config.root)
    _check_plugin_tables(config, pm)
    pm.hook.torchlint_configure(config=config)
    return Session(config, pm, rule_registry(pm))
