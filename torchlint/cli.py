"""The `torchlint` command line: check, rule, rules, plugins.

Exit codes follow ruff: 0 clean, 1 findings, 2 usage or configuration error.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import click

from torchlint import __version__
from torchlint.config import ConfigError, split_selectors
from torchlint.pluginmanager import PluginError

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _fail(message: str) -> None:
    click.echo(f"torchlint: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _session(config: str | None, start: Path, **cli):
    from torchlint.session import open_session

    try:
        return open_session(Path(config) if config else None, start, Path.cwd(), **cli)
    except (ConfigError, PluginError) as exc:
        _fail(str(exc))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="torchlint")
def main() -> None:
    """torchlint finds the PyTorch bugs that cost days."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--select", multiple=True, help="Rules to enable: codes, names, prefixes (TL1) or ALL. Replaces the configured set.")
@click.option("--extend-select", multiple=True, help="Rules to enable on top of the selection.")
@click.option("--ignore", multiple=True, help="Rules to disable: codes, names or prefixes.")
@click.option("--extend-exclude", multiple=True, help="Extra glob patterns of paths to skip.")
@click.option("--output-format", default="full", show_default=True, help="full, concise, json, json-lines, sarif, github, gitlab, junit, pylint (and plugin formats).")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False, writable=True), help="Write the report to this file instead of stdout.")
@click.option("--statistics", is_flag=True, help="Print a count per rule instead of each finding.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--force-exclude", is_flag=True, help="Apply excludes to paths named on the command line too (pre-commit).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="pyproject.toml (or a TOML file holding the table) to use.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the cache (.torchlint_cache/ in the project root).")
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False), help="Report only findings not recorded in this baseline file.")
@click.option("--write-baseline", "write_baseline_path", type=click.Path(dir_okay=False), help="Record the current findings as the baseline and exit 0.")
@click.option("--fail-on-stale-baseline", is_flag=True, help="Exit 1 when baseline entries no longer match any finding.")
@click.option("--fix", is_flag=True, help="Apply safe fixes in place.")
@click.option("--fix-only", is_flag=True, help="Apply fixes and report nothing else; exit 0 unless a fix could not be written (or --exit-non-zero-on-fix).")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when a fix was applied, even if no finding remains (CI that must not change files).")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes that may change behaviour (with --fix or --diff).")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing. Exit 1 if there is a diff.")
@click.option("--show-fixes", is_flag=True, help="List the fixes applied, per file.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Worker processes (default: one per core).")
@click.option("--isolated", is_flag=True, help="Read no configuration file. A config's `plugins = [...]` imports code from the checked tree: use this to lint untrusted code (a pull request).")
@click.option("--show-settings", is_flag=True, help="Print the configuration file used and the resolved settings, then exit.")
@click.option("--show-files", is_flag=True, help="Print the files that would be checked, then exit.")
def check(paths, select, extend_select, ignore, extend_exclude, output_format, output_file, statistics, exit_zero, force_exclude, config_path, quiet, no_cache, baseline_path, write_baseline_path, fail_on_stale_baseline, fix, fix_only, exit_non_zero_on_fix, unsafe_fixes, diff, show_fixes, jobs, isolated, show_settings, show_files):
    """Check PATHS (files or folders; default: the current folder) with the static rules."""
    paths = list(paths) or [Path(".")]
    fix = fix or fix_only
    session = _session(
        config_path,
        paths[0],
        isolated=isolated,
        select=split_selectors(select),
        extend_select=split_selectors(extend_select),
        ignore=split_selectors(ignore),
        extend_exclude=list(extend_exclude),
        force_exclude=force_exclude,
    )
    formats = session.output_formats()
    if output_format not in formats:
        _fail(f"unknown --output-format {output_format!r} (choose from {', '.join(formats)})")
    try:
        enabled = session.enabled()
    except ConfigError as exc:
        _fail(str(exc))
    if show_settings:
        _print_settings(session.config, enabled, isolated)
        return
    if show_files:
        from torchlint.static.discover import discover

        for item in discover(paths, session.config, cwd=Path.cwd()):
            click.echo(item.display)
        return

    from torchlint.static.engine import StaticEngine

    try:
        engine = StaticEngine(session.config, session.pm, session.rules, enabled)
    except ConfigError as exc:
        _fail(str(exc))
    from torchlint.static.parallel import default_jobs

    cache = None if no_cache else session.cache(enabled)
    result = engine.check_paths(paths, cwd=Path.cwd(), cache=cache, jobs=jobs or default_jobs())
    if fix or diff:
        from torchlint.fix.runner import fix_findings

        outcome = fix_findings(engine, result.findings, unsafe=unsafe_fixes, write=fix and not diff)
        if diff:
            for rejected in outcome.rejections():
                click.echo(f"{rejected.path}:{rejected.location.line}:{rejected.location.column}: {rejected.code} {rejected.message}", err=True)
            sys.stdout.write("".join(f.diff for f in outcome.files))
            changed = sum(1 for f in outcome.files if f.diff)
            if not quiet:
                click.echo(f"Would fix {_count(outcome.fixed, 'finding')} in {_count(changed, 'file')}.", err=True)
            sys.exit(EXIT_FINDINGS if changed and not exit_zero else EXIT_CLEAN)
        if show_fixes:
            for file_fix in outcome.files:
                for applied in file_fix.applied:
                    click.echo(f"{file_fix.path}: fixed: {applied.message}")
        if fix_only:
            # Fixes and nothing else; a fix that could not be written is still said (TL002).
            for rejected in outcome.rejections():
                click.echo(f"{rejected.path}:{rejected.location.line}:{rejected.location.column}: {rejected.code} {rejected.message}", err=True)
            if not quiet:
                click.echo(f"Fixed {_count(outcome.fixed, 'finding')}.", err=True)
            failed = bool(outcome.rejections()) or (exit_non_zero_on_fix and outcome.fixed > 0)
            sys.exit(EXIT_FINDINGS if failed and not exit_zero else EXIT_CLEAN)
        if outcome.fixed:
            result = engine.check_paths(paths, cwd=Path.cwd(), cache=cache, jobs=jobs or default_jobs())
            result.fixed = outcome.fixed
        result.findings = sorted([*result.findings, *outcome.rejections()], key=lambda f: f.sort_key())
    session.pm.hook.torchlint_sessionfinish(result=result)

    from torchlint.report import ReportContext

    # Formats that describe rules (SARIF) describe the ones this run used.
    used = {code: rule for code, rule in session.rules.items() if code in enabled}
    report_ctx = ReportContext(session.config, used)
    if write_baseline_path:
        from torchlint.baseline import write_baseline

        count = write_baseline(Path(write_baseline_path), result.findings, report_ctx)
        if not quiet:
            click.echo(f"Wrote {count} findings to baseline {write_baseline_path}.")
        sys.exit(EXIT_CLEAN)
    stale: list[dict] = []
    if baseline_path:
        from torchlint.baseline import Baseline

        try:
            applied = Baseline.load(Path(baseline_path)).apply(result.findings, report_ctx, result.checked_paths)
        except ConfigError as exc:
            _fail(str(exc))
        result.findings, result.baseline_suppressed, stale = applied.kept, applied.suppressed, applied.stale

    import contextlib

    from torchlint.atomic import atomic_text_stream

    with atomic_text_stream(Path(output_file)) if output_file else contextlib.nullcontext(sys.stdout) as out:
        if statistics:
            _print_statistics(result, session.rules, out, as_json=output_format in ("json", "json-lines"))
        else:
            session.pm.hook.torchlint_report(
                findings=result.findings, format=output_format, stream=out, config=session.config, rules=used
            )
    if not quiet and output_format in ("full", "concise") and not statistics:
        _print_summary(result, sys.stdout)
    if stale and not quiet:
        click.echo(f"{len(stale)} baseline entries no longer match (the code was fixed or moved files):", err=True)
        for entry in stale[:20]:
            click.echo(f"  {entry['path']}: {entry['code']} x{entry['count']}", err=True)
    exit_code = result.exit_code or (EXIT_FINDINGS if stale and fail_on_stale_baseline else EXIT_CLEAN)
    if exit_non_zero_on_fix and result.fixed:
        exit_code = EXIT_FINDINGS
    sys.exit(EXIT_CLEAN if exit_zero else exit_code)


def _print_statistics(result, rules, out, as_json: bool = False) -> None:
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
    for code, count in rows:
        rule = rules.get(code)
        out.write(f"{count:>5}  {code:<6} {rule.name if rule else ''}\n")


def _print_summary(result, out) -> None:
    files = len({f.path for f in result.findings})
    notes = []
    if result.fixed:
        notes.append(f"{result.fixed} fixed")
    if result.suppressed:
        notes.append(f"{result.suppressed} suppressed")
    if result.baseline_suppressed:
        notes.append(f"{result.baseline_suppressed} suppressed by baseline")
    tail = f" ({', '.join(notes)})" if notes else ""
    checked = _count(result.files_checked, "file")
    if result.findings:
        out.write(f"Found {_count(len(result.findings), 'finding')} in {_count(files, 'file')}; {checked} checked{tail}.\n")
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


def _print_settings(config, enabled, isolated: bool) -> None:
    """What applies, as `--show-settings` prints it: where it came from, then each setting."""
    source = "none (--isolated)" if isolated else str(config.config_file) if config.config_file else "none found (defaults)"
    rows = [
        ("configuration file", source),
        ("project root", str(config.root)),
        ("enabled rules", ", ".join(sorted(enabled))),
        ("select", ", ".join(config.select) if config.select is not None else "default (every default-on rule)"),
        ("extend-select", ", ".join(config.extend_select) or "-"),
        ("ignore", ", ".join(config.ignore) or "-"),
        ("exclude", ", ".join(config.excludes)),
        ("per-file-ignores", "; ".join(f"{glob} = {', '.join(codes)}" for glob, codes in config.per_file_ignores) or "-"),
        ("respect-gitignore", str(config.respect_gitignore).lower()),
        ("target-torch", (f"{config.target_torch} (from {config.target_torch_source})" if config.target_torch_source else config.target_torch) or "installed or latest"),
        ("plugins", ", ".join(config.plugins) or "-"),
        ("plugin options", ", ".join(f"[tool.torchlint.{name}]" for name in sorted(config.plugin_tables)) or "-"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        click.echo(f"{name:<{width}}  {value}")


def _count(number: int, noun: str) -> str:
    """`1 file`, `2 files`."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


@main.command()
@click.argument("code_or_name")
@click.option("--config", "config_path", type=click.Path(dir_okay=False))
def rule(code_or_name, config_path):
    """Show the documentation of one rule (by code or name)."""
    from torchlint.ruledoc import render_terminal

    session = _session(config_path, Path.cwd())
    for code, candidate in session.rules.items():
        if code_or_name.upper() == code or code_or_name == candidate.name:
            click.echo(render_terminal(candidate), nl=False)
            return
    _fail(f"unknown rule {code_or_name!r} (see `torchlint rules`)")


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False))
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text")
def rules(config_path, output_format):
    """List every rule: code, name, default on/off, fix, summary."""
    from torchlint.ruledoc import rule_table

    session = _session(config_path, Path.cwd())
    if output_format == "json":
        import json

        click.echo(json.dumps([r.metadata() for r in session.rules.values()], indent=2))
    else:
        click.echo(rule_table(session.rules), nl=False)


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False))
def plugins(config_path):
    """List registered plugins, their versions and the hooks each implements."""
    from torchlint.pluginmanager import plugin_table

    session = _session(config_path, Path.cwd())
    for name, version, hooks in plugin_table(session.pm):
        click.echo(f"{name}  ({version})\n    {', '.join(hooks)}")


from torchlint.runtime.command import run as _run_command  # noqa: E402

main.add_command(_run_command)
