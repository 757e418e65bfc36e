"""The `torchlint run` click command. Cheap to import: no torch, no runtime machinery until
the command actually runs (the CLI imports this module on every invocation)."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("target")
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--device", default="cpu", show_default=True,
              help="cpu, cuda, fake-cuda (CUDA placement simulated without a GPU), meta, or a plugin's mode.")
@click.option("--steps", type=click.IntRange(min=1), help="Stop after N optimizer steps (or N forward calls without an optimizer).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=300.0, show_default=True,
              help="Seconds before the program and everything it started are killed.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the report: no progress, no program output.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="pyproject.toml (or a TOML file holding the table) to use.")
def run(target, script_args, device, steps, timeout, quiet, output_format, config_path):
    """Run TARGET under runtime probes and report static findings with evidence.

    TARGET is a script (train.py, run as __main__ with the arguments after --) or an entry
    file.py:function returning (model, example_inputs), run for one forward and backward pass.
    Exit 1 when a finding is confirmed or the run shows an error, 2 on a usage error.
    """
    from torchlint.runtime.pipeline import RunOptions, execute

    options = RunOptions(
        target=target,
        script_args=tuple(script_args),
        device=device,
        steps=steps,
        timeout=timeout,
        quiet=quiet,
        output_format=output_format,
        config_path=config_path,
    )
    sys.exit(execute(options, cwd=Path.cwd(), out=sys.stdout))
