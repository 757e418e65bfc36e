"""`torchlint run` from options to exit code: static check, child run, merge, report.

The static check of the target and the files it imports runs while the child imports torch,
so the two overlap; files the run imported beyond those are checked after it. Nothing here imports torch or the user's code.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from torchlint.findings import Finding, Severity
from torchlint.runtime.parent.defaults import DEFAULT_WATCH_STEPS
from torchlint.runtime.parent.interrupts import Stopped, stopped_by_signals
from torchlint.runtime.merge.matching import CONFIRMED, RUNTIME_ONLY, merge
from torchlint.runtime.report.text import probe_results, status_of, write_json, write_text
from torchlint.runtime.parent.runner import RunningChild, RunSpec
from torchlint.runtime.parent.scope import same_files
from torchlint.static.import_closure import import_closure
from torchlint.runtime.parent.target import TargetError, parse_target

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


@dataclass(frozen=True)
class RunOptions:
    target: str
    script_args: tuple[str, ...] = ()
    device: str = "cpu"
    fake_devices: int = 1
    steps: int | None = None
    #: Steps the probes watch every torch call for (None: the whole run); see `--watch-steps`.
    watch_steps: int | None = DEFAULT_WATCH_STEPS
    timeout: float = 300.0
    quiet: bool = False
    output_format: str = "text"
    #: Where the report goes (`-o FILE`); None: stderr for text, stdout for JSON.
    output_file: str | None = None
    config_path: str | None = None
    disabled_probes: tuple[str, ...] = ()
    report_dir: str | None = None
    #: Ranks started through torch's launcher (runtime.distributed.launch); None: one plain
    #: process. One rank is still launched: a DDP script reads RANK, LOCAL_RANK and WORLD_SIZE.
    nproc_per_node: int | None = None
    #: The values of the options probes' plugins add (``--compile``, ``--profile``), by name.
    plugin_options: dict[str, Any] = field(default_factory=dict)

    def probe_options(self, cwd: Path) -> dict:
        """What the probes read in the child as ``ctx.options``."""
        options: dict = dict(self.plugin_options)
        options["watch_steps"] = self.watch_steps
        fake_devices = self.fake_devices
        if self.nproc_per_node:
            options["distributed"] = {"nproc": self.nproc_per_node}
            if self.device == "fake-cuda":
                fake_devices = max(fake_devices, self.nproc_per_node)  # one simulated GPU per local rank
        if fake_devices != 1:
            options["fake_devices"] = fake_devices
        if self.disabled_probes:
            options["disabled_probes"] = list(self.disabled_probes)
        if self.report_dir:
            options["report_dir"] = str((cwd / self.report_dir).absolute())
        return options


def _error(message: str) -> int:
    sys.stderr.write(f"torchlint: error: {message}\n")
    return EXIT_ERROR


def execute(options: RunOptions, *, cwd: Path, out: TextIO) -> int:
    """The run's exit status: the program's own when it failed (a non-zero `sys.exit`, an
    exception, a signal), else 1 when a finding fails the run and 0 when none does. ``out`` is
    our stdout, which carries only a JSON report (`--output-format json` without `-o`)."""
    # --timeout is the user's wall clock: it starts before any work of our own (the static
    # check, the child's torch import), and the child ends itself at the deadline.
    deadline = time.monotonic() + options.timeout
    report_on_stdout = options.output_format == "json" and not options.output_file
    try:
        target = parse_target(options.target, cwd)
    except TargetError as exc:
        return _error(str(exc))
    if target.entry and options.script_args:
        return _error(f"{options.target} is an entry; arguments after -- are for scripts only")
    if options.nproc_per_node:
        from torchlint.runtime.channel import HAS_ABSTRACT_SOCKETS

        if not HAS_ABSTRACT_SOCKETS:
            return _error("--nproc-per-node needs Linux: the ranks send their evidence through an abstract socket")

    from torchlint.config import ConfigError
    from torchlint.pluginmanager import PluginError
    from torchlint.session import open_session

    try:
        session = open_session(Path(options.config_path) if options.config_path else None, target.path.parent, cwd)
        enabled = session.enabled()
        proof_only = session.proof_only(enabled)
    except (ConfigError, PluginError) as exc:
        return _error(str(exc))

    spec = RunSpec(
        target=target,
        args=options.script_args,
        device=options.device,
        steps=options.steps,
        timeout=options.timeout,
        quiet=options.quiet,
        plugins=session.config.plugins,
        project_root=str(session.config.root) if session.config.root else None,
        options=options.probe_options(cwd),
        deadline=deadline,
    )
    if report_on_stdout and not options.quiet:
        sys.stderr.write("torchlint: the program's stdout goes to stderr: stdout carries the JSON report "
                         "(-o FILE keeps the program's stdout its own)\n")
    stop: Stopped | None = None
    running: list[RunningChild] = []
    with stopped_by_signals(first_interrupt=lambda: bool(running) and running[0].interrupt()):
        try:
            child = RunningChild(spec, cwd=cwd, monitor=_monitor(options), hold_output=True,
                                 stdout_to_stderr=report_on_stdout)
        except Stopped as exc:
            sys.stderr.write(f"torchlint: stopped by {exc.name} before the program started\n")
            return exc.exit_code
        running.append(child)
        # Only the target and what it imports: a sibling script never used is not read.
        closure = [target.path]
        static, refuted = [], []
        try:
            closure = import_closure(target.path, _roots(session.config.root, target.path))
            # Said after the child's opening line and before the program's output, whichever
            # process gets there first; the program waits for it (runtime.side_channel).
            static, refuted = _static_findings(session, enabled, closure, cwd, options.quiet, options.device,
                                               f"{target.path.name} and the files it imports",
                                               say=child.side.say_after_opening, proof_only=proof_only)
        except Stopped as exc:
            stop = exc  # the static check is unfinished: the run's evidence is still reported
        except BaseException:
            child.kill()
            raise
        finally:
            child.side.release()
        result = child.finish(stop)
        if result.stopped_by is None:
            more = _imported_beyond(result, closure, [target.path.parent, *_roots(session.config.root, target.path)])
            if more:
                # What the run imported that no import statement showed (importlib, sys.path edits).
                try:
                    static, refuted = _static_findings(session, enabled, closure + more, cwd, options.quiet, options.device,
                                                       f"{target.path.name}, its imports and {len(more)} more file(s) the run imported",
                                                       proof_only=proof_only)
                except Stopped as exc:  # the program has ended: report what the first check found
                    result.stopped_by, result.stopped_signo = exc.name, exc.signo
        else:
            sys.stderr.write(f"torchlint: stopped by {result.stopped_by}; the program and everything it started were "
                             "stopped; reporting what was gathered\n")

    error = result.first("error")
    if error is not None:
        return _error(error["message"])
    if options.nproc_per_node:
        from torchlint.runtime.distributed.report import merge_ranks

        findings, outcome = merge_ranks(static, result, world=options.nproc_per_node, enabled=enabled | proof_only, cwd=cwd,
                                        timeout=options.timeout, rules=session.rules, refuted=refuted)
    else:
        findings, outcome = merge(static, result, enabled=enabled | proof_only, cwd=cwd, timeout=options.timeout,
                                  rules=session.rules, refuted=refuted)
    findings = _in_cells(findings, outcome, closure, cwd)
    header = f"torchlint run {target.display} --device {options.device}"
    if options.nproc_per_node:
        header += f" --nproc-per-node {options.nproc_per_node}"
    results = _probe_results(result)
    sections = _sections(session.pm, results, cwd)
    target_info = {"path": str(target.path), "entry": target.entry, "device": options.device}
    try:
        with _report_stream(options, out) as stream:
            _write_report(options.output_format, stream, findings, outcome, header, target_info, results, sections)
    except OSError as exc:
        sys.stderr.write(f"torchlint: error: the report could not be written to {options.output_file}: {exc.strerror or exc}\n")
        return EXIT_ERROR
    if options.report_dir:
        from torchlint.runtime.report.html_page import write_report_dir

        where = write_report_dir(Path(options.report_dir), findings=findings, outcome=outcome, header=header, results=results,
                                 sections=sections, target=target_info, cwd=cwd)
        if not options.quiet:
            sys.stderr.write(f"torchlint: report written to {where}\n")
    if result.stopped_by is not None:
        return 128 + result.stopped_signo
    failed = program_exit_status(outcome, result.returncode)
    if failed:
        return failed
    return EXIT_FINDINGS if any(_fails(f) for f in findings) else EXIT_CLEAN


def program_exit_status(outcome, returncode: int | None) -> int:
    """The status `python train.py` would have exited with, when the program failed; 0 when
    it did not (it completed, was stopped as asked, or torchlint ended it at the timeout)."""
    if outcome.status == "exited":
        code = outcome.data.get("exit_code", returncode)
        return code & 0xFF if isinstance(code, int) else 1
    if outcome.status == "raised":
        # Python dies of the SIGINT a KeyboardInterrupt stands for; a shell says 130.
        return 128 + signal.SIGINT if outcome.data.get("type") == "KeyboardInterrupt" else 1
    if outcome.status == "killed" and isinstance(returncode, int):
        return 128 - returncode if returncode < 0 else returncode or 1
    return 0


def _report_stream(options: RunOptions, out: TextIO):
    """`-o FILE` (written whole, atomically), stdout for a JSON report, stderr for text."""
    import contextlib

    if options.output_file:
        from torchlint.atomic import atomic_text_stream

        return atomic_text_stream(Path(options.output_file))
    return contextlib.nullcontext(out if options.output_format == "json" else sys.stderr)


def _write_report(output_format: str, stream: TextIO, findings, outcome, header: str, target_info: dict,
                  results: dict, sections: list) -> None:
    if output_format == "json":
        import io
        import json

        buffer = io.StringIO()
        write_json(findings, outcome, target_info, buffer)
        document = json.loads(buffer.getvalue())
        document.update(probe_results(document, results))
        json.dump(document, stream, indent=2, ensure_ascii=False)
        stream.write("\n")
        return
    write_text(findings, outcome, header, stream)
    for section in sections:
        if section.text:
            stream.write("\n" + "\n".join(section.text) + "\n")


def _in_cells(findings: list[Finding], outcome, files: list[Path], cwd: Path) -> list[Finding]:
    """Notebook findings (and the outcome's `nb.ipynb:47`) by cell. Until here every position,
    static or from the run, counts lines of the joined cells: that is how static findings and
    evidence are matched."""
    notebooks = {}
    for path in files:
        if path.suffix.lower() == ".ipynb":
            from torchlint.notebook import Notebook, NotebookError

            try:
                notebooks[os.path.realpath(path)] = Notebook.parse(path.read_bytes())
            except (OSError, NotebookError):
                continue
    if not notebooks:
        return findings
    from torchlint.notebook.cells import mention_cells, to_cells

    # the run names files by base name (`crash.ipynb:6`), the static check by display path
    mentions = {os.path.basename(real): notebook for real, notebook in notebooks.items()}
    mentions.update({os.path.relpath(real, cwd): notebook for real, notebook in notebooks.items()})
    outcome.summary, outcome.short = mention_cells(outcome.summary, mentions), mention_cells(outcome.short, mentions)
    return to_cells(findings, notebooks, key=lambda shown: os.path.realpath(cwd / shown), mentions=mentions)


def _monitor(options: RunOptions):
    """With several ranks, the parent watches their collectives while they run."""
    if (options.nproc_per_node or 1) < 2:
        return None
    from torchlint.runtime.distributed.monitor import DivergenceMonitor

    return DivergenceMonitor(options.nproc_per_node)


def _probe_results(result) -> dict[str, dict]:
    """The summaries the probes published (``ctx.publish``), by probe name, in the order they came."""
    return {event["probe"]: event.get("data") or {} for event in result.events
            if event.get("event") == "probe-result" and isinstance(event.get("probe"), str)}


def _sections(pm, results: dict[str, dict], cwd: Path) -> list:
    if not results:
        return []
    from torchlint.runtime.report.sections import sections_of

    return sections_of(pm, results, cwd)


def _fails(finding: Finding) -> bool:
    status = status_of(finding)
    return status == CONFIRMED or (status == RUNTIME_ONLY and finding.severity == Severity.ERROR)


def _roots(root: Path | None, script: Path) -> list[Path]:
    """Where imports are looked up besides the script's folder: the project root, when the
    script is inside it."""
    if root is None:
        return []
    try:
        script.resolve().relative_to(root.resolve())
    except ValueError:
        return []
    return [root]


def _imported_beyond(result, closure: list[Path], project: list[Path]) -> list[Path]:
    """The project's files the run imported that the closure missed (a library outside the
    project, however it is installed, is not the project's)."""
    event = result.first("imported")
    if event is None:
        return []
    known = same_files(closure)
    inside = tuple(os.path.join(os.path.realpath(folder), "") for folder in project)
    return [Path(path) for path in event.get("files", ()) if isinstance(path, str) and os.path.realpath(path) not in known
            and os.path.realpath(path).startswith(inside) and os.path.isfile(path)]


def _static_findings(session, enabled: set[str], files: list[Path], cwd: Path, quiet: bool, device: str = "cpu",
                     what: str = "", say=None, proof_only: set[str] = frozenset()) -> tuple[list[Finding], list[Finding]]:
    """The static findings of ``files``, and those the run must prove to report: the ones the
    project phase dropped, and every finding of a ``proof_only`` rule. ``say`` writes the
    progress line (default: to stderr)."""
    from torchlint.config import ConfigError
    from torchlint.static.engine import StaticEngine

    try:
        engine = StaticEngine(session.config, session.pm, session.rules, enabled | proof_only)
    except ConfigError as exc:
        sys.stderr.write(f"torchlint: static check skipped: {exc}\n")
        return [], []
    engine.proving = frozenset(proof_only)
    if device != "cpu":
        # Run on an accelerator, the project uses one, whatever its files say.
        engine.assume_mentioned("cuda")
    engine.map_cells = False  # evidence counts joined notebook lines; mapped after merging
    # The files the program runs are its project here: a sibling script it never imports is
    # not part of this run (and reading a whole tree cold would delay every `torchlint run`).
    result = engine.check_paths(files, cwd=cwd, project_context=False)
    reported = [finding for finding in result.findings if finding.code not in proof_only]
    to_prove = [finding for finding in result.findings if finding.code in proof_only]
    if not quiet:
        unproven = f"; {len(to_prove)} more of off-by-default rules, reported if the run proves them" if to_prove else ""
        (say or sys.stderr.write)(f"torchlint: static check: {len(reported)} finding(s) in {result.files_checked} file(s): {what}{unproven}\n")
    return reported, list(engine.refuted) + to_prove


