"""Every extension point of torchlint.

A plugin is any module or object with functions named like these hooks and decorated with
``torchlint.hookimpl``. torchlint's own rules and output formats are plugins registered
exactly the way a third-party package registers its own:

- an entry point in the ``torchlint`` group of the package's metadata::

      [project.entry-points.torchlint]
      my-rules = "my_package.torchlint_rules"

- or a module named in configuration: ``plugins = ["my_local_rules"]`` under
  ``[tool.torchlint]`` (the project root is importable for this).

``torchlint plugins`` lists what is registered and which hooks each plugin implements.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

import pluggy

if TYPE_CHECKING:
    from torchlint.config import Config
    from torchlint.findings import Finding
    from pathlib import Path

    import click

    from torchlint.rule import Rule
    from torchlint.runtime.report.sections import RunSection
    from torchlint.static.context import FileContext, ProjectContext

hookspec = pluggy.HookspecMarker("torchlint")


@hookspec
def torchlint_configure(config: Config) -> None:
    """Called once after configuration is read, before any file is checked.

    ``config.plugin_options(name)`` returns the table ``[tool.torchlint.<name>]`` so a plugin
    can read its own settings. Raise ``torchlint.config.ConfigError`` to reject them; the
    user sees the message and torchlint exits with code 2.
    """


@hookspec
def torchlint_rules() -> list[type[Rule]]:
    """Return the static rule classes this plugin provides.

    Called once per run. Codes must be unique across all plugins; a clash is a
    configuration error naming both plugins.
    """


@hookspec
def torchlint_file_facts(ctx: FileContext) -> dict[str, Any] | None:
    """Return a JSON-able summary of one file for cross-file checks, or None.

    Called after the file's rules have run, with the parsed file's context. The returned
    dict is merged into ``ctx.facts`` under the plugin's own keys; it is cached with the
    file, so it must depend only on the file's content.
    """


@hookspec
def torchlint_project_check(project: ProjectContext) -> list[Finding]:
    """Return findings that need facts from several files.

    Called once after every file has been checked, with ``project.facts`` mapping each
    checked path to its facts. Suppression comments and per-file ignores are applied to the
    returned findings like to any other.
    """


@hookspec(firstresult=True)
def torchlint_report(
    findings: list[Finding], format: str, stream: TextIO, config: Config, rules: dict[str, type[Rule]], color: bool
) -> bool | None:
    """Write ``findings`` to ``stream`` in ``format``; return True if this plugin handled it.

    ``rules`` maps every registered code to its rule class, for formats that describe rules
    (SARIF). ``torchlint.report.ReportContext`` gives repo-relative paths, source lines and
    stable fingerprints. ``color``: whether a human format may use ANSI colour (`--color`,
    `NO_COLOR`, a terminal); machine formats ignore it. (A hook implementation may leave out
    any argument it does not use.)

    The first plugin that returns a non-None value wins, so a third-party plugin can add a
    format or replace a built-in one.
    """


@hookspec
def torchlint_output_formats() -> list[str]:
    """Return the names of the output formats this plugin can write (for ``--output-format``)."""


@hookspec
def torchlint_sessionfinish(result: Any) -> None:
    """Called at the end of a run with the ``CheckResult``; may inspect or add to it."""


@hookspec
def torchlint_probes() -> list[type]:
    """Return the runtime probe classes this plugin provides (subclasses of
    ``torchlint.runtime.child.probing.Probe``).

    Called once in the child process of ``torchlint run``, after torch is imported and
    before the target runs, so a plugin module may defer its torch imports to this hook (the
    static ``torchlint check`` loads every plugin and must not import torch). Each probe
    declares the static codes it ``confirms`` and the TL7xx ``runtime_code`` of evidence that
    matches no static finding.
    """


@hookspec
def torchlint_run_options() -> list[click.Option]:
    """Return the command-line options this plugin adds to ``torchlint run`` (``click.Option``
    objects), e.g. the compile probe's ``--compile``.

    Called in the parent, without torch, when ``torchlint run`` parses its command line. The
    value of each option reaches the child as ``ctx.options[option.name]`` (click's name for
    it: ``--memory-steps`` is ``memory_steps``), so it must be JSON-able. Names must not clash
    with ``torchlint run``'s own options or another plugin's.
    """


@hookspec
def torchlint_run_section(name: str, result: dict[str, Any], cwd: Path) -> RunSection | None:
    """Return the report section for the summary the probe ``name`` published, or None.

    A probe publishes a JSON-able summary with ``ctx.publish(probe, data)``; the JSON report
    holds it under the probe's name, and the text and HTML reports show the sections that
    plugins return here (``torchlint.runtime.report.sections.RunSection``: terminal lines, an HTML
    fragment and summary cards). Return None for a name that is not your probe's.
    """


@hookspec(firstresult=True)
def torchlint_select_device(requested: str) -> Any:
    """Return the device mode for ``--device requested`` (a ``torchlint.runtime.devices.modes.DeviceMode``),
    or None if this plugin does not provide it.

    Called once in the child process of ``torchlint run``. The first non-None result wins;
    the built-in modes (cpu, cuda, fake-cuda, meta) are implemented ``trylast``, so a plugin
    can add a mode or replace a built-in one.
    """
