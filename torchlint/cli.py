"""The `torchlint` command line: check, rule, rules, plugins.

Exit codes follow ruff: 0 clean, 1 findings, 2 usage or configuration error.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from torchlint import __version__
from torchlint.check_output import count, print_settings, print_statistics, print_summary
from torchlint.config import ConfigError, split_selectors
from torchlint.pluginmanager import PluginError

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _fail(message: str) -> None:
    click.echo(f"torchlint: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _session(config: Path | str | None, start: Path, **cli):
    from torchlint.session import open_session

    try:
        return open_session(Path(config) if config else None, start, Path.cwd(), **cli)
    except (ConfigError, PluginError) as exc:
        _fail(str(exc))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="torchlint")
def main() -> None:
    """torchlint finds the PyTorch bugs that cost days."""


NO_PYTHON_FILES = "warning: No Python files found under the given path(s)"
CACHE_DIR_HELP = "Where the cache goes (default: .torchlint_cache/ in the project root)."


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--select", multiple=True, help="Rules to enable: codes, names, prefixes (TL1) or ALL, in any case. Replaces the configured set.")
@click.option("--extend-select", multiple=True, help="Rules to enable on top of the selection.")
@click.option("--ignore", multiple=True, help="Rules to disable: codes, names or prefixes.")
@click.option("--exclude", multiple=True, help="Glob patterns of paths to skip, replacing the configured (and default) `exclude`.")
@click.option("--extend-exclude", multiple=True, help="Extra glob patterns of paths to skip.")
@click.option("--per-file-ignores", multiple=True, metavar="GLOB:CODES", help="Rules to ignore in files matching GLOB, e.g. \"tests/*:TL301,TL302\"; adds to the configured ones.")
@click.option("--target-torch", metavar="VERSION", help="The torch version the code must run on (e.g. 2.4), for rules about removed or new APIs.")
@click.option("--output-format", default="full", show_default=True, help="full, concise, json, json-lines, sarif, github, gitlab, junit, pylint (and plugin formats).")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False, writable=True), help="Write the report to this file instead of stdout.")
@click.option("--statistics", is_flag=True, help="Print a count per rule (and how many are fixable) instead of each finding.")
@click.option("-e", "--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option(
    "--color", "color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
    help="Colour the human formats: on a terminal (auto, not under NO_COLOR), always, or never.",
)
@click.option("--force-exclude", is_flag=True, help="Apply excludes to paths named on the command line too (pre-commit), and to --stdin-filename.")
@click.option("--config", "config_args", multiple=True, metavar="PATH|KEY=VALUE", help="A pyproject.toml (or TOML file holding the table) to use, or a TOML `key = value` overriding one setting, e.g. --config \"select = ['TL1']\". Repeatable.")
@click.option("--stdin-filename", metavar="PATH", help="Read the source from stdin (also `-` as the path) and report it as PATH: its configuration, excludes and per-file-ignores apply.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("--project-context/--no-project-context", default=None, help="Read the other files of the given files' projects for cross-file facts, reporting only the files given (the default), so a file's findings do not depend on what else is named. --no-project-context: read only the files given.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False), envvar="TORCHLINT_CACHE_DIR", show_envvar=True, help=CACHE_DIR_HELP)
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False), help="Report only findings not recorded in this baseline file.")
@click.option("--write-baseline", "write_baseline_path", type=click.Path(dir_okay=False), help="Record the current findings as the baseline and exit 0.")
@click.option("--fail-on-stale-baseline", is_flag=True, help="Exit 1 when baseline entries no longer match any finding.")
@click.option("--fix/--no-fix", default=None, help="Apply safe fixes in place (stdin: print the fixed source). --no-fix overrides `fix = true` in the configuration.")
@click.option("--fix-read-only", is_flag=True, help="With --fix or --add-noqa: also write files whose permissions say they are read-only (refused with TL002 otherwise).")
@click.option("--fix-only", is_flag=True, help="Apply fixes and report nothing else; exit 0 unless a fix could not be written (or --exit-non-zero-on-fix).")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when a fix was applied, even if no finding remains (CI that must not change files).")
@click.option("--unsafe-fixes/--no-unsafe-fixes", default=None, help="Also apply fixes that may change behaviour (with --fix or --diff). --no-unsafe-fixes overrides `unsafe-fixes = true`.")
@click.option("--fixable", multiple=True, help="Rules whose fixes may be applied (default: ALL). Replaces the configured set.")
@click.option("--extend-fixable", multiple=True, help="Rules whose fixes may be applied, on top of `fixable`.")
@click.option("--unfixable", multiple=True, help="Rules whose fixes are never applied or offered.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing. Exit 1 if there is a diff.")
@click.option("--show-fixes", is_flag=True, help="List each fix applied, with its file, line and rule code.")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa: TLxxx` to every line with a finding (merged into an existing noqa comment) and exit; exit 1 only if some finding could not be silenced.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Worker processes (default: one per core).")
@click.option("--isolated", is_flag=True, help="Read no configuration file. A config's `plugins = [...]` imports code from the checked tree: use this to lint untrusted code (a pull request).")
@click.option("--show-settings", is_flag=True, help="Print the configuration file used and the resolved settings, then exit.")
@click.option("--show-files", is_flag=True, help="Print the files that would be checked, then exit.")
def check(paths, select, extend_select, ignore, exclude, extend_exclude, per_file_ignores, target_torch, output_format, output_file, statistics, exit_zero, color, force_exclude, config_args, stdin_filename, quiet, project_context, no_cache, cache_dir, baseline_path, write_baseline_path, fail_on_stale_baseline, fix, fix_only, exit_non_zero_on_fix, unsafe_fixes, fixable, extend_fixable, unfixable, diff, show_fixes, add_noqa, jobs, isolated, show_settings, show_files, fix_read_only):
    """Check PATHS (files or folders; default: the current folder; `-`: stdin) with the static rules."""
    from torchlint.config import parse_per_file_ignores, split_config_arguments
    from torchlint.stdin import STDIN_NAME

    reading_stdin = _reads_stdin(list(paths), stdin_filename, add_noqa=add_noqa)
    if add_noqa and (fix or fix_only or diff):
        _fail("--add-noqa silences findings; it cannot be combined with --fix, --fix-only or --diff")
    stdin_name = stdin_filename or STDIN_NAME
    paths = list(paths) or [Path(".")]
    try:
        config_file, overrides = split_config_arguments(config_args)
        cli = dict(
            select=split_selectors(select),
            extend_select=split_selectors(extend_select),
            ignore=split_selectors(ignore),
            exclude=list(exclude),
            extend_exclude=list(extend_exclude),
            per_file_ignores=parse_per_file_ignores(per_file_ignores),
            target_torch=target_torch,
            fixable=split_selectors(fixable),
            extend_fixable=split_selectors(extend_fixable),
            unfixable=split_selectors(unfixable),
            fix=fix,
            unsafe_fixes=unsafe_fixes,
            cache_dir=cache_dir,
            force_exclude=force_exclude,
            project_context=project_context,
        )
    except ConfigError as exc:
        _fail(str(exc))
    # stdin's configuration is found from the file it stands for, as a real path's would be
    start = Path(stdin_name if stdin_filename else ".") if reading_stdin else paths[0]
    session = _session(config_file, start, isolated=isolated, overrides=overrides, **cli)
    config = session.config
    # `fix = true` in the configuration is `--fix`; --no-fix, --diff and --add-noqa outrank it
    fix = fix_only or (config.fix and not add_noqa)
    unsafe_fixes = config.unsafe_fixes
    formats = session.output_formats()
    if output_format not in formats:
        _fail(f"unknown --output-format {output_format!r} (choose from {', '.join(formats)})")
    try:
        enabled = session.enabled()
        fixable_codes = session.fixable()
    except ConfigError as exc:
        _fail(str(exc))
    if show_settings:
        print_settings(config, session.rules, enabled, fixable_codes, isolated, sys.stdout)
        return
    if show_files:
        from torchlint.static.discover import discover

        if reading_stdin:
            click.echo(stdin_name)
            return
        listed = discover(paths, config, cwd=Path.cwd())
        for item in listed:
            click.echo(item.display)
        if not listed and not quiet:
            click.echo(NO_PYTHON_FILES, err=True)
        return

    from torchlint.static.engine import StaticEngine

    try:
        engine = StaticEngine(config, session.pm, session.rules, enabled, fixable=fixable_codes)
    except ConfigError as exc:
        _fail(str(exc))
    from torchlint.static.parallel import default_jobs

    # Stdin's report goes to stderr when its fixed source takes stdout, as ruff does.
    report_stream = sys.stdout
    cache = None if no_cache else session.cache(enabled)
    if cache is not None and cache.problem is not None:
        # A folder the user named is a mistake to fix now; the default one, which they
        # did not choose, costs only speed.
        if config.cache_dir is not None:
            _fail(f"cache-dir: {cache.problem}")
        click.echo(f"warning: {cache.problem}; checking without the cache", err=True)
    if reading_stdin:
        from torchlint.static.discover import force_excluded
        from torchlint.stdin import check_stdin, fix_stdin, read_stdin, write_source

        data, problem = read_stdin()
        if config.force_exclude and stdin_filename and force_excluded(Path(stdin_filename), config):
            if fix and not diff:
                write_source(data or b"")  # an editor replaces its buffer with what comes back
            sys.exit(EXIT_CLEAN)
        result = check_stdin(engine, stdin_name, data, problem, cache=cache, jobs=jobs or default_jobs())
    else:
        result = engine.check_paths(paths, cwd=Path.cwd(), cache=cache, jobs=jobs or default_jobs())
        if result.files_checked == 0 and not quiet:
            click.echo(NO_PYTHON_FILES, err=True)
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    if add_noqa:
        _add_noqa(result.findings, quiet, config.root, fix_read_only)
    if fix or diff:
        from torchlint.fix.runner import fix_findings
        from torchlint.notebook.cells import location_text

        if reading_stdin:
            outcome, fixed_source = fix_stdin(engine, stdin_name, data, result, unsafe=unsafe_fixes)
            if not diff:
                write_source(fixed_source)
                report_stream = sys.stderr
        else:
            outcome = fix_findings(engine, result.findings, unsafe=unsafe_fixes, write=fix and not diff, read_only_too=fix_read_only)
        if diff:
            for rejected in outcome.rejections():
                click.echo(f"{rejected.path}:{location_text(rejected)}: {rejected.code} {rejected.message}", err=True)
            sys.stdout.write("".join(f.diff for f in outcome.files))
            changed = sum(1 for f in outcome.files if f.diff)
            if not quiet:
                click.echo(f"Would fix {count(outcome.fixed, 'finding')} in {count(changed, 'file')}.", err=True)
            sys.exit(EXIT_FINDINGS if changed and not exit_zero else EXIT_CLEAN)
        if show_fixes:
            _show_fixes(outcome, report_stream)
        if fix_only:
            # Fixes and nothing else; a fix that could not be written is still said (TL002).
            for rejected in outcome.rejections():
                click.echo(f"{rejected.path}:{location_text(rejected)}: {rejected.code} {rejected.message}", err=True)
            if not quiet:
                click.echo(f"Fixed {count(outcome.fixed, 'finding')}.", err=True)
            failed = bool(outcome.rejections()) or (exit_non_zero_on_fix and outcome.fixed > 0)
            sys.exit(EXIT_FINDINGS if failed and not exit_zero else EXIT_CLEAN)
        if outcome.fixed:
            if reading_stdin:
                result = check_stdin(engine, stdin_name, fixed_source, None, cache=cache, jobs=jobs or default_jobs())
            else:
                result = engine.check_paths(paths, cwd=Path.cwd(), cache=cache, jobs=jobs or default_jobs())
            result.fixed = outcome.fixed
        result.findings = sorted([*result.findings, *outcome.rejections()], key=lambda f: f.sort_key())
    session.pm.hook.torchlint_sessionfinish(result=result)

    from torchlint.report import ReportContext

    # Formats that describe rules (SARIF) describe the ones this run used.
    used = {code: rule for code, rule in session.rules.items() if code in enabled}
    report_ctx = ReportContext(config, used)
    if write_baseline_path:
        from torchlint.baseline import write_baseline

        written = write_baseline(Path(write_baseline_path), result.findings, report_ctx)
        if not quiet:
            click.echo(f"Wrote {written} findings to baseline {write_baseline_path}.")
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

    from torchlint.report.style import wants_color

    with atomic_text_stream(Path(output_file)) if output_file else contextlib.nullcontext(report_stream) as out:
        colored = wants_color(color, out)
        if statistics:
            print_statistics(result, session.rules, out, as_json=output_format in ("json", "json-lines"))
        else:
            session.pm.hook.torchlint_report(
                findings=result.findings, format=output_format, stream=out, config=config, rules=used, color=colored
            )
    if not quiet and output_format in ("full", "concise") and not statistics:
        print_summary(result, report_stream)
    if stale and not quiet:
        click.echo(f"{len(stale)} baseline entries no longer match (the code was fixed or moved files):", err=True)
        for entry in stale[:20]:
            click.echo(f"  {entry['path']}: {entry['code']} x{entry['count']}", err=True)
    exit_code = result.exit_code or (EXIT_FINDINGS if stale and fail_on_stale_baseline else EXIT_CLEAN)
    if exit_non_zero_on_fix and result.fixed:
        exit_code = EXIT_FINDINGS
    sys.exit(EXIT_CLEAN if exit_zero else exit_code)


def _show_fixes(outcome, stream) -> None:
    """`--show-fixes`: each fix applied, with the code and line of the finding it fixed (the
    line in the file as it was before the fixes), as ruff lists them."""
    applied = [(file_fix.path, *fixed) for file_fix in outcome.files for fixed in file_fix.fixed]
    if not applied:
        click.echo("No fixes applied.", file=stream)
        return
    click.echo(f"Fixed {count(len(applied), 'finding')}:", file=stream)
    for path, code, line, message in applied:
        click.echo(f"  {path}:{line}: {code} {message}", file=stream)


def _reads_stdin(paths: list[Path], stdin_filename: str | None, *, add_noqa: bool) -> bool:
    """`check -`, or `--stdin-filename NAME` with no paths, as ruff reads them."""
    reading = paths == [Path("-")] or (stdin_filename is not None and not paths)
    if not reading and Path("-") in paths:
        _fail("`-` (stdin) cannot be checked together with other paths")
    if stdin_filename is not None and not reading:
        _fail("--stdin-filename names stdin's source: give no paths (or `-`)")
    if add_noqa and reading:
        _fail("--add-noqa edits files; it cannot be used with stdin")
    return reading


def _add_noqa(findings, quiet: bool, root: Path, read_only_too: bool) -> None:
    """`--add-noqa`: write the comments, say what was skipped and how many were added, exit 0
    (a run that silenced everything it found has done its job)."""
    from torchlint.add_noqa import add_noqa
    from torchlint.guarded_write import WritePolicy

    outcome = add_noqa(findings, WritePolicy(root=root, read_only_too=read_only_too))
    for message in outcome.skipped:
        click.echo(f"warning: {message}", err=True)
    if not quiet:
        click.echo(f"Added {count(outcome.added, 'noqa directive')} in {count(outcome.files, 'file')}.", err=True)
    sys.exit(EXIT_FINDINGS if outcome.skipped else EXIT_CLEAN)


@main.command()
@click.argument("code_or_name")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="pyproject.toml (or a TOML file holding the table) naming plugins to load.")
def rule(code_or_name, config_path):
    """Show the documentation of one rule (by code or name)."""
    from torchlint.ruledoc import render_terminal

    from torchlint.selection import suggestion

    session = _session(config_path, Path.cwd())
    for code, candidate in session.rules.items():
        if code_or_name.upper() == code or code_or_name.lower() == candidate.name.lower():
            click.echo(render_terminal(candidate), nl=False)
            return
    _fail(f"unknown rule {code_or_name!r} ({suggestion(code_or_name, session.rules)})")


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="pyproject.toml (or a TOML file holding the table) naming plugins to load.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True, help="A table, or JSON with each rule's metadata.")
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
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="pyproject.toml (or a TOML file holding the table) naming plugins to load.")
def plugins(config_path):
    """List registered plugins, their versions and the hooks each implements."""
    from torchlint.pluginmanager import plugin_table

    session = _session(config_path, Path.cwd())
    for name, version, hooks in plugin_table(session.pm):
        click.echo(f"{name}  ({version})\n    {', '.join(hooks)}")


@main.command()
@click.option("--config", "config_args", multiple=True, metavar="PATH|KEY=VALUE", help="The configuration file naming the cache-dir, or a `key = value` override, as for check.")
@click.option("--cache-dir", type=click.Path(file_okay=False), envvar="TORCHLINT_CACHE_DIR", show_envvar=True, help=CACHE_DIR_HELP)
def clean(config_args, cache_dir):
    """Remove the cache: the configured cache folder and every .torchlint_cache folder under
    the current one."""
    from torchlint.clean import cache_folders, release
    from torchlint.config import find_config_file, load_config, split_config_arguments, with_cli

    cwd = Path.cwd()
    try:
        # The settings only, no plugins: removing a cache must not import a project's code.
        config_file, overrides = split_config_arguments(config_args)
        config = load_config(config_file or find_config_file(cwd), cwd=cwd, overrides=overrides)
        config = with_cli(config, cache_dir=cache_dir)
    except ConfigError as exc:
        _fail(str(exc))
    removed = 0
    for folder in cache_folders(config.cache_folder, cwd):
        shown = _shown(folder, cwd)
        outcome = release(folder)
        if outcome.problem is not None:
            _fail(f"cannot remove {shown}: {outcome.problem}")
        if outcome.not_a_cache:
            click.echo(f"warning: {shown} is not a torchlint cache folder; nothing in it removed", err=True)
            continue
        if outcome.kept:
            kept = ", ".join(outcome.kept[:3]) + (", ..." if len(outcome.kept) > 3 else "")
            click.echo(f"warning: {shown} also holds what torchlint did not write ({kept}); kept it, and the folder", err=True)
        if outcome.removed:
            click.echo(f"Removed {shown}" if not outcome.kept else f"Removed torchlint's entries from {shown}")
            removed += 1
    if not removed:
        click.echo("No cache to remove.")


def _shown(path: Path, cwd: Path) -> str:
    try:
        return path.relative_to(cwd).as_posix() or "."
    except ValueError:
        return str(path)


@main.command()
@click.option("--stdio", is_flag=True, help="Talk over stdin and stdout (the default, and the only transport).")
def server(stdio):
    """Run the language server (LSP) for editors: diagnostics as you type, fixes, rule docs."""
    # pygls is imported here, never by `check`: its import costs every command otherwise.
    from torchlint.lsp.server import main as serve

    serve()


# `torchlint lsp` is what editors' docs and users guess first; it is the same command.
main.add_command(server, name="lsp")

from torchlint.runtime.parent.command import run as _run_command  # noqa: E402

main.add_command(_run_command)
