"""What `torchlint check` prints besides the findings: the summary line, `--statistics`,
`--show-settings`."""

from __future__ import annotations

from collections import Counter
from typing import TextIO


def count(number: int, noun: str) -> str:
    """`1 file`, `2 files`."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def print_statistics(result, rules, out: TextIO, as_json: bool = False) -> None:
    counts = Counter(f.code for f in result.findings)
    fixable = Counter(f.code for f in result.findings if f.fix is not None)
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if as_json:
        import json

        document = [
            {"code": code, "name": rules[code].name if code in rules else None, "count": count, "fixable": fixable[code]}
            for code, count in rows
        ]
        out.write(json.dumps(document, indent=2) + "\n")
        return
    if not rows:
        return
    # ruff's columns, with the fixable count spelled out and a total under them.
    out.write(f"{'count':>5}  {'code':<6} {'fixable':>7}  rule\n")
    for code, number in rows:
        rule = rules.get(code)
        out.write(f"{number:>5}  {code:<6} {fixable[code]:>7}  {rule.name if rule else ''}\n")
    out.write(f"{sum(counts.values()):>5}  {'total':<6} {sum(fixable.values()):>7}\n")


def print_summary(result, out: TextIO) -> None:
    files = len({f.path for f in result.findings})
    notes = []
    if result.fixed:
        notes.append(f"{result.fixed} fixed")
    if result.suppressed:
        notes.append(f"{result.suppressed} suppressed")
    if result.baseline_suppressed:
        notes.append(f"{result.baseline_suppressed} suppressed by baseline")
    tail = f" ({', '.join(notes)})" if notes else ""
    checked = count(result.files_checked, "file")
    if result.findings:
        out.write(f"Found {count(len(result.findings), 'finding')} in {count(files, 'file')}; {checked} checked{tail}.\n")
    else:
        out.write(f"All checks passed! {checked} checked{tail}.\n")
    fixable = sum(1 for f in result.findings if f.fix is not None)
    if fixable:
        safe = sum(1 for f in result.findings if f.fix is not None and f.fix.applicability == "safe")
        if safe:
            hint = f"[*] {safe} fixable with --fix"
            if fixable > safe:
                hint += f"; {fixable - safe} more with --fix --unsafe-fixes"
        else:
            hint = f"{fixable} fixable with --fix --unsafe-fixes"  # "more" than no safe fix reads wrong
        out.write(hint + ".\n")


def _listed(values, empty: str = "-") -> str:
    return ", ".join(values) or empty


def settings_rows(config, rules, enabled: set[str], fixable: set[str], isolated: bool) -> list[tuple[str, str]]:
    """What applies, as `--show-settings` prints it: where it came from, then each setting."""
    source = "none (--isolated)" if isolated else str(config.config_file) if config.config_file else "none found (defaults)"
    return [
        ("configuration file", source),
        ("overrides", "; ".join(config.overrides) or "-"),
        ("project root", str(config.root)),
        ("enabled rules", ", ".join(sorted(enabled))),
        ("select", ", ".join(config.select) if config.select is not None else "default (every default-on rule)"),
        ("extend-select", _listed(config.extend_select)),
        ("ignore", _listed(config.ignore)),
        ("exclude", _listed(config.exclude)),
        ("extend-exclude", _listed(config.extend_exclude)),
        ("include", _listed(config.include)),
        ("extend-include", _listed(config.extend_include)),
        ("per-file-ignores", "; ".join(f"{glob} = {', '.join(codes)}" for glob, codes in config.per_file_ignores) or "-"),
        ("respect-gitignore", str(config.respect_gitignore).lower()),
        ("target-torch", _target_torch(config)),
        ("fix", str(config.fix).lower()),
        ("unsafe-fixes", str(config.unsafe_fixes).lower()),
        ("fixable", _listed(config.fixable, "ALL") if config.fixable is not None else "ALL"),
        ("extend-fixable", _listed(config.extend_fixable)),
        ("unfixable", _listed(config.unfixable)),
        # the enabled rules that offer a fix and may apply it
        ("fixable rules", ", ".join(sorted(c for c in fixable & enabled if c in rules and rules[c].fix_safety)) or "-"),
        ("cache-dir", str(config.cache_folder)),
        ("plugins", _listed(config.plugins)),
        ("plugin options", ", ".join(f"[tool.torchlint.{name}]" for name in sorted(config.plugin_tables)) or "-"),
    ]


def print_settings(config, rules, enabled: set[str], fixable: set[str], isolated: bool, out: TextIO) -> None:
    rows = settings_rows(config, rules, enabled, fixable, isolated)
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        out.write(f"{name:<{width}}  {value}\n")


def _target_torch(config) -> str:
    if config.target_torch is not None:
        return f"{config.target_torch} (from {config.target_torch_source})" if config.target_torch_source else config.target_torch
    if config.assumed_torch is not None:
        return f"unset; TL302 assumes {config.assumed_torch} ({config.assumed_torch_source})"
    return "unset (any torch version)"
