"""The `torchlint run` click command. Cheap to import: no torch, no runtime machinery until
the command actually runs (the CLI imports this module on every invocation)."""

from __future__ import annotations

import sys
from pathlib import Path

import click


class _Backend(click.Choice):
    """The top of the compile ladder; `--compile train.py` gets a message saying what to write."""

    def convert(self, value, param, ctx):
        if value not in self.choices and (value.endswith(".py") or ":" in value or Path(value).exists()):
            self.fail(f"{value!r} is not a backend: `--compile` takes its value after `=` "
                      f"(--compile=eager); put a bare --compile after the target (torchlint run {value} --compile)", param, ctx)
        return super().convert(value, param, ctx)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("target")
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--device", default="cpu", show_default=True,
              help="cpu, cuda, fake-cuda (CUDA placement simulated without a GPU), meta, or a plugin's mode.")
@click.option("--fake-devices", type=click.IntRange(min=1), default=1, show_default=True,
              help="How many GPUs --device fake-cuda simulates (cuda:0 .. cuda:N-1).")
@click.option("--steps", type=click.IntRange(min=1), help="Stop after N optimizer steps (or N forward calls without an optimizer).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=300.0, show_default=True,
              help="Seconds, counted from torchlint's own start, before the program and everything it started are "
                   "stopped; the report names the line it was on.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the report: no progress, no program output.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="pyproject.toml (or a TOML file holding the table) to use.")
@click.option("--compile", "compile_backend", type=_Backend(["eager", "aot_eager", "inductor"]), is_flag=False,
              flag_value="aot_eager", default=None,
              help="Compile the model the program runs up the backend ladder eager -> aot_eager [-> inductor]: graph breaks, "
                   "recompilations, the failing stage, accuracy and speed-up. --compile alone means --compile=aot_eager.")
@click.option("--profile", is_flag=True, help="Profile the training loop: hot user lines and modules, time split, FLOPs per module.")
@click.option("--profile-steps", type=click.IntRange(min=1), default=5, show_default=True,
              help="Steps to profile (after one warm-up step).")
@click.option("--nproc-per-node", "nproc_per_node", type=click.IntRange(min=1), default=1, show_default=True,
              help="Run the script on N ranks through torch's launcher (torchrun): probes in every rank, collectives "
                   "compared across ranks, one report.")
@click.option("--report", "report_dir", type=click.Path(file_okay=False),
              help="Write report.html, findings.json and (with --profile) trace.json to this folder.")
def run(target, script_args, device, fake_devices, steps, timeout, quiet, output_format, config_path, compile_backend, profile,
        profile_steps, report_dir, nproc_per_node):
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
        fake_devices=fake_devices,
        steps=steps,
        timeout=timeout,
        quiet=quiet,
        output_format=output_format,
        config_path=config_path,
        compile=compile_backend,
        profile=profile,
        profile_steps=profile_steps,
        report_dir=report_dir,
        nproc_per_node=nproc_per_node,
    )
    sys.exit(execute(options, cwd=Path.cwd(), out=sys.stdout))
