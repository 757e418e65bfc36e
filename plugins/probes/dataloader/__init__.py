"""DataLoader probe: how much of the training step waits for the next batch.

* TL741 (info) a DataLoader whose batches kept the training loop waiting for more than a
  share of the time between optimizer steps (30 % unless `--dataloader-threshold` says
  otherwise), at the line that created it, with its `num_workers`, `pin_memory` and batch
  size. It confirms TL405 (`dataloader-without-num-workers`) at that line when the loader
  had `num_workers=0`.

Every run publishes the measurement, per DataLoader creation line, in the report's
"input pipeline" section: batches, mean wait, share of the step time. Under
`--device fake-cuda` or `meta` the step time is not that of the device the program asked
for, so the section says so and TL741 is not reported.

This module is torch-free (the static `torchlint check` imports every plugin); the probe
itself is in `.probe`, imported when `torchlint run` asks for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchlint.findings import Severity
from torchlint.pluginmanager import hookimpl
from torchlint.probe import RuntimeRule

#: Percent of the step time spent waiting for batches above which TL741 is reported.
DEFAULT_THRESHOLD = 30.0
PROBE_NAME = "dataloader"


class InputPipelineBound(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the dataloader probe) when the training loop spent more than
    30 % of the time between optimizer steps waiting for a DataLoader's next batch (the time
    inside the loader's iterator: `next(...)`, and starting an epoch's iteration), at the line
    that created the DataLoader, with its `num_workers`, `pin_memory`, batch size and the
    measured share. `--dataloader-threshold PERCENT` sets the share. A loader that kept the
    loop waiting less than 50 ms in all is not reported, whatever its share: that much is a busy
    machine's scheduling noise, and nothing a change would win back. The report's "input
    pipeline" section shows the measurement for every DataLoader, reported or not.

    When the loader had `num_workers=0`, the finding also confirms TL405
    (`dataloader-without-num-workers`) on that line.

    ## Why is this bad?
    While the main process loads, decodes and collates a batch, the model waits: on a GPU the
    device idles, and the whole run is as slow as its input pipeline. Worker processes
    (`num_workers`) prepare the next batches while the model trains; `pin_memory=True` makes
    the copies to the GPU faster and asynchronous; `persistent_workers=True` keeps the
    workers between epochs instead of starting them again.

    ## Example
    ```python
    loader = DataLoader(ImageFolder(root, transform=augment), batch_size=64, shuffle=True)
    ```

    ## Use instead
    ```python
    loader = DataLoader(ImageFolder(root, transform=augment), batch_size=64, shuffle=True,
                        num_workers=8, pin_memory=True, persistent_workers=True)
    ```

    ## Known limitations
    The time measured is wall-clock time on this machine: a run on a CPU (`--device cpu`)
    measures the step as the CPU computes it, which is usually slower than the GPU the
    program is meant for, so the share on the GPU is higher than reported. Not reported under
    `--device fake-cuda` or `meta`, whose step times are not a GPU's. A loader iterated in a
    thread of its own (a prefetcher) is not counted: the loop does not wait on it directly.
    """

    code = "TL741"
    name = "input-pipeline-bound"
    summary = "The training loop waited for a DataLoader's next batch for a large share of each step"
    severity = Severity.INFO


@hookimpl
def torchlint_rules() -> list[type]:
    return [InputPipelineBound]


@hookimpl
def torchlint_probes() -> list[type]:
    from .probe import DataLoaderProbe  # imports torch: only in the child of `torchlint run`

    return [DataLoaderProbe]


@hookimpl
def torchlint_run_options() -> list:
    import click  # only `torchlint run` parses these; `check` need not load click's option machinery here

    return [
        click.Option(
            ["--dataloader-threshold"],
            type=click.FloatRange(0, 100),
            default=DEFAULT_THRESHOLD,
            show_default=True,
            metavar="PERCENT",
            help="Report TL741 when waiting for a DataLoader's batches takes more than this share of the step time.",
        )
    ]


@hookimpl
def torchlint_run_section(name: str, result: dict[str, Any], cwd: Path) -> Any:
    if name != PROBE_NAME or not isinstance(result, dict):
        return None
    from torchlint.probe import RunSection, e, where

    loaders = result.get("loaders") or []
    text = [f"input pipeline: {_basis(result)}"]
    if result.get("note"):
        text.append(f"  {result['note']}")
    if not loaders:
        text.append("  no DataLoader was iterated")
    for loader in loaders:
        at = loader.get("at") or [None, None]
        text.append(f"  {where(at[0], at[1], cwd)}  {_settings(loader)}: {_measured(loader)}")
    rows = "".join(
        f"<tr><td>{e(where((loader.get('at') or [None])[0], (loader.get('at') or [None, None])[1], cwd))}</td>"
        f"<td>{e(_settings(loader))}</td><td>{e(loader.get('batches', 0))}</td><td>{e(_ms(loader.get('mean_wait_ms')))}</td>"
        f"<td>{e(_percent(loader.get('share')))}</td></tr>"
        for loader in loaders
    )
    note = f"<p>{e(result['note'])}</p>" if result.get("note") else ""
    table = (
        "<table><tr><th>DataLoader</th><th>settings</th><th>batches</th><th>mean wait</th><th>share of step time</th>"
        f"</tr>{rows}</table>" if loaders else "<p>no DataLoader was iterated</p>"
    )
    fragment = f"<section><h2>input pipeline</h2><p>{e(_basis(result))}</p>{note}{table}</section>"
    shared = [loader for loader in loaders if isinstance(loader.get("share"), (int, float))]
    cards: tuple[tuple[str, str, str], ...] = ()
    if shared:
        worst = max(shared, key=lambda loader: loader["share"])
        at = worst.get("at") or [None, None]
        cards = (("waiting for batches", _percent(worst["share"]), f"of the step time, {where(at[0], at[1], cwd)}"),)
    return RunSection(title="input pipeline", text=text, html=fragment, cards=cards)


def _basis(result: dict[str, Any]) -> str:
    steps = result.get("steps") or 0
    if steps:
        return (f"time waiting for each DataLoader's batches, as a share of the {steps} intervals between optimizer "
                f"steps ({_ms(result.get('step_ms'))} each on average)")
    return "fewer than 3 intervals between optimizer steps: each share is of the time from the loader's first batch to its last"


def _settings(loader: dict[str, Any]) -> str:
    return (f"num_workers={loader.get('num_workers')}, pin_memory={loader.get('pin_memory')}, "
            f"batch_size={loader.get('batch_size')}")


def _measured(loader: dict[str, Any]) -> str:
    share = loader.get("share")
    of = f"{_percent(share)} of the step time" if isinstance(share, (int, float)) else "no share (too few batches, or none between steps)"
    batches = loader.get("batches", 0)
    return f"{batches} batch{'es' * (batches != 1)}, {_ms(loader.get('mean_wait_ms'))} mean wait, {of}"


def _ms(value: Any) -> str:
    return f"{value:.1f} ms" if isinstance(value, (int, float)) else "-"


def _percent(value: Any) -> str:
    return f"{100 * value:.0f}%" if isinstance(value, (int, float)) else "-"
