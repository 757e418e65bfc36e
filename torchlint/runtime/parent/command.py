"""The `torchlint run` click command. Cheap to import: no torch, no runtime machinery until
the command actually runs (the CLI imports this module on every invocation).

The command's own options are the run's (target, device, steps, timeout, report); a probe's
options come from its plugin (``torchlint_run_options``) and are added when `torchlint run`
parses its command line or shows its help, so `torchlint check` never pays for them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from torchlint.runtime.parent.defaults import DEFAULT_WATCH_STEPS


class RunCommand(click.Command):
    """A click command whose options include those of every probe's plugin."""

    _with_plugins = False
    #: Where the run will look for its configuration (see ``_configuration_of``).
    _configuration: tuple[Path | None, Path] | None = None

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # The options must exist before click parses the line that uses them: the plugins a
        # configuration names are read from the configuration the run itself will read.
        valued = {opt for param in self.params if isinstance(param, click.Option) and not param.is_flag for opt in param.opts}
        self._configuration = _configuration_of(args, valued)
        return super().parse_args(ctx, args)

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        if not self._with_plugins:
            self._with_plugins = True
            config_file, start = self._configuration or (None, Path.cwd())
            self.params.extend(_plugin_options({param.name for param in self.params}, config_file, start))
        return super().get_params(ctx)


def _configuration_of(args: list[str], valued: set[str]) -> tuple[Path | None, Path]:
    """The configuration `torchlint run ARGS` reads, found before the line is parsed: the file
    `--config` names, else the one found from the target's folder (the first argument before
    `--` that is no option nor the value of one of ``valued``, and names a file;
    `file.py:function` names file.py)."""
    config_file = None
    start = Path.cwd()
    found_target = False
    values = iter(args)
    for arg in values:
        if arg == "--":
            break
        if arg in valued:
            value = next(values, None)
            if arg == "--config" and value is not None:
                config_file = Path(value)
        elif arg.startswith("--config="):
            config_file = Path(arg.split("=", 1)[1])
        elif not found_target and not arg.startswith("-"):
            path = Path(arg.rsplit(":", 1)[0] if ":" in arg and not Path(arg).is_file() else arg)
            if path.is_file():
                start, found_target = path.resolve().parent, True
    return config_file, start


def _plugin_options(own: set[str | None], config_file: Path | None = None, start: Path | None = None) -> list[click.Option]:
    """The options of installed probe plugins and of those the run's configuration names (the
    ``config_file``, else the one found from ``start``). A configuration that cannot be read
    adds none: the run itself says what is wrong."""
    from torchlint.config import ConfigError, find_config_file, load_config
    from torchlint.pluginmanager import PluginError, make_plugin_manager

    try:
        start = start or Path.cwd()
        config = load_config(config_file if config_file is not None and config_file.is_file() else find_config_file(start),
                             cwd=Path.cwd())
        pm = make_plugin_manager(config.plugins, config.root)
    except (ConfigError, PluginError):
        try:
            pm = make_plugin_manager()
        except PluginError:
            return []
    options: list[click.Option] = []
    owners: dict[str, str] = {}
    for impl in pm.hook.torchlint_run_options.get_hookimpls():
        for option in impl.function() or ():
            if option.name in own or option.name in owners:
                other = f"plugin {owners[option.name]!r}" if option.name in owners else "torchlint run itself"
                raise click.UsageError(f"plugin {impl.plugin_name!r} adds the option {'/'.join(option.opts)}, which {other} already has")
            owners[option.name] = impl.plugin_name
            options.append(option)
    return options


class WatchSteps(click.ParamType):
    """A number of steps, or `all`."""

    name = "N|all"

    def convert(self, value, param, ctx):
        if value is None or isinstance(value, int):
            return value
        if str(value).strip().lower() == "all":
            return None
        try:
            number = int(value)
        except ValueError:
            number = 0
        if number < 1:
            self.fail(f"{value!r} is neither a positive number of steps nor 'all'", param, ctx)
        return number




@click.command(cls=RunCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("target")
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--device", default="cpu", show_default=True,
              help="cpu, cuda, fake-cuda (CUDA placement simulated without a GPU), meta, or a plugin's mode.")
@click.option("--fake-devices", type=click.IntRange(min=1), default=1, show_default=True,
              help="How many GPUs --device fake-cuda simulates (cuda:0 .. cuda:N-1).")
@click.option("--steps", type=click.IntRange(min=1), help="Stop after N optimizer steps (or N forward calls without an optimizer).")
@click.option("--watch-steps", type=WatchSteps(), default=str(DEFAULT_WATCH_STEPS), show_default=True, metavar="N|all",
              help="Steps during which the probes watch every torch call; after them the program runs at nearly "
                   "full speed, with only module, optimizer and error hooks. `all` watches the whole run.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=300.0, show_default=True,
              help="Seconds, counted from torchlint's own start, before the program and everything it started are "
                   "stopped; the report names the line it was on.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the report: no progress, no program output.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="The report's format. Text goes to stderr; JSON to stdout (the program's stdout then goes to "
                   "stderr), unless -o names a file.")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False), help="Write the report to this file; the program's "
              "stdout and stderr stay its own.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="pyproject.toml (or a TOML file holding the table) to use.")
@click.option("--disable-probe", "disabled_probes", multiple=True, metavar="NAME",
              help="Run without this probe (repeatable); `torchlint plugins` lists the probes' plugins.")
@click.option("--nproc-per-node", "nproc_per_node", type=click.IntRange(min=1), default=None,
              help="Run the script on N ranks through torch's launcher (torchrun), N=1 included (a DDP script on one "
                   "GPU): probes in every rank, collectives compared across ranks, one report.")
@click.option("--report", "report_dir", type=click.Path(file_okay=False),
              help="Write report.html, findings.json and the probes' files (the profile's trace.json) to this folder.")
def run(target, script_args, device, fake_devices, steps, watch_steps, timeout, quiet, output_format, output_file, config_path,
        disabled_probes, nproc_per_node, report_dir, **plugin_options):
    """Run TARGET under runtime probes and report static findings with evidence.

    TARGET is a script (train.py, run as __main__ with the arguments after --) or an entry
    file.py:function returning (model, example_inputs), run for one forward and backward pass.
    The program keeps its own stdin, stdout and stderr; torchlint's progress and report go to
    stderr. Exit status: the program's own when it fails (sys.exit(3) exits 3, an exception 1);
    else 1 when a finding is confirmed or the run shows an error, 0 when clean, 2 on a usage error.
    """
    from torchlint.runtime.parent.pipeline import RunOptions, execute

    options = RunOptions(
        target=target,
        script_args=tuple(script_args),
        device=device,
        fake_devices=fake_devices,
        steps=steps,
        watch_steps=watch_steps,
        timeout=timeout,
        quiet=quiet,
        output_format=output_format,
        output_file=output_file,
        config_path=config_path,
        disabled_probes=tuple(disabled_probes),
        report_dir=report_dir,
        nproc_per_node=nproc_per_node,
        plugin_options=plugin_options,
    )
    sys.exit(execute(options, cwd=Path.cwd(), out=sys.stdout))
