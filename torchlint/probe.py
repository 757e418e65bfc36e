"""Everything a runtime probe's plugin needs, in one module: ``from torchlint.probe import ...``.

``torchlint.rule`` is the static rule author's module; this is the probe author's. The modules
under ``torchlint.runtime`` are the engine's own and may move between releases; the names here
stay. The built-in probes (``plugins/probes/*``) import from nothing else of the runtime, and a
test keeps them to it.

Importing this module costs nothing: each name is looked up in its runtime module the first time
it is used (PEP 562), so a probe plugin's ``__init__`` (loaded by ``torchlint check``, which never
imports torch) may import ``RuntimeRule`` and ``RunSection`` from here, while ``Probe`` and the
helpers that need torch are only loaded in the child of ``torchlint run``.

The names, by what they are for:

- the base classes: ``Probe`` (lifecycle, ``self.ctx``, ``guarded``), ``RuntimeRule`` (a probe's
  TL7xx rules), ``ProbeDispatch`` (the dispatch itself, for a probe that replays calls);
- where a call comes from: ``Site``, ``USER``, ``LIBRARY``, ``FrameClassifier``, ``frame_locals``;
- operations and tensors: ``op_name``, ``tensors_in``, ``passes_tensor``, ``storages``;
- steps: ``on_optimizer_created``, ``step_closure``;
- patching torch or the program for the run only: ``Patches``;
- parameters and the models that reach an optimizer: ``kept``, ``norms``, ``prefixes``,
  ``by_device``, ``SHOWN``, ``counted``, ``listed``, ``models_in_reach``, ``parameter_label``,
  ``parameter_names``;
- warnings raised by the program: ``TargetWarning``;
- the report: ``RunSection``, ``where``, ``display_path``; the HTML helpers ``e`` (escape),
  ``clip``, ``legend``, ``split_bar``, ``stacked_bars``, ``paired_bars``;
- subsystems some built-in probes drive: checkpoints (``storage_locations``), distributed runs
  (``CollectiveRecorder``), ``torch.compile`` (``ModelCapture``, ``ProgramCompiles``,
  ``describe_inputs``, ``LADDER``, ``CompileChecker``, ``TraceCollector``, ``inductor_cache_dir``,
  ``summarise_trace``, ``minify``, ``minify_kind``, ``minified_note``, ``minify_lines``,
  ``minify_html``, ``CompiledProfile``) and the profiler's trace (``LINE_PREFIX``,
  ``MODULE_PREFIX``, ``analyse``, ``load_events``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Each public name -> the runtime module that defines it.
_HOME = {
    "RuntimeRule": "torchlint.runtime.rules",
    "Probe": "torchlint.runtime.child.probing",
    "ProbeDispatch": "torchlint.runtime.child.probing",
    "op_name": "torchlint.runtime.op_names",
    "tensors_in": "torchlint.runtime.child.probing",
    "passes_tensor": "torchlint.runtime.child.probing",
    "Site": "torchlint.runtime.frames",
    "USER": "torchlint.runtime.frames",
    "LIBRARY": "torchlint.runtime.frames",
    "FrameClassifier": "torchlint.runtime.frames",
    "frame_locals": "torchlint.runtime.frames",
    "storages": "torchlint.runtime.storages",
    "on_optimizer_created": "torchlint.runtime.child.steps",
    "step_closure": "torchlint.runtime.child.steps",
    "Patches": "torchlint.runtime.patches",
    "kept": "torchlint.runtime.parameter_reads",
    "norms": "torchlint.runtime.parameter_reads",
    "prefixes": "torchlint.runtime.parameter_reads",
    "by_device": "torchlint.runtime.parameter_reads",
    "SHOWN": "torchlint.runtime.reach",
    "counted": "torchlint.runtime.reach",
    "listed": "torchlint.runtime.reach",
    "models_in_reach": "torchlint.runtime.reach",
    "parameter_label": "torchlint.runtime.reach",
    "parameter_names": "torchlint.runtime.reach",
    "TargetWarning": "torchlint.runtime.child.user_warnings",
    "RunSection": "torchlint.runtime.report.sections",
    "where": "torchlint.runtime.report.sections",
    "display_path": "torchlint.runtime.merge.matching",
    "e": "torchlint.runtime.report.html_kit",
    "clip": "torchlint.runtime.report.html_kit",
    "legend": "torchlint.runtime.report.html_kit",
    "split_bar": "torchlint.runtime.report.html_kit",
    "stacked_bars": "torchlint.runtime.report.html_kit",
    "paired_bars": "torchlint.runtime.report.html_kit",
    "storage_locations": "torchlint.runtime.checkpoint_locations",
    "CollectiveRecorder": "torchlint.runtime.distributed.collectives",
    "ModelCapture": "torchlint.runtime.compile.capture",
    "ProgramCompiles": "torchlint.runtime.compile.capture",
    "describe_inputs": "torchlint.runtime.compile.capture",
    "LADDER": "torchlint.runtime.compile.check",
    "CompileChecker": "torchlint.runtime.compile.check",
    "TraceCollector": "torchlint.runtime.compile.check",
    "inductor_cache_dir": "torchlint.runtime.compile.check",
    "summarise_trace": "torchlint.runtime.compile.check",
    "minify": "torchlint.runtime.compile.minify",
    "minify_kind": "torchlint.runtime.compile.minify",
    "minified_note": "torchlint.runtime.compile.minify_report",
    "minify_lines": "torchlint.runtime.compile.minify_report",
    "minify_html": "torchlint.runtime.compile.minify_report",
    "CompiledProfile": "torchlint.runtime.compile.profile",
    "LINE_PREFIX": "torchlint.runtime.profile_trace",
    "MODULE_PREFIX": "torchlint.runtime.profile_trace",
    "analyse": "torchlint.runtime.profile_trace",
    "load_events": "torchlint.runtime.profile_trace",
}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})


if TYPE_CHECKING:  # for type checkers and editors only; at run time each name loads on first use
    from torchlint.runtime.checkpoint_locations import storage_locations
    from torchlint.runtime.compile.capture import ModelCapture, ProgramCompiles, describe_inputs
    from torchlint.runtime.compile.check import LADDER, CompileChecker, TraceCollector, inductor_cache_dir, summarise_trace
    from torchlint.runtime.compile.minify import minify, minify_kind
    from torchlint.runtime.compile.minify_report import minified_note, minify_html, minify_lines
    from torchlint.runtime.compile.profile import CompiledProfile
    from torchlint.runtime.distributed.collectives import CollectiveRecorder
    from torchlint.runtime.frames import LIBRARY, USER, FrameClassifier, Site, frame_locals
    from torchlint.runtime.report.html_kit import clip, e, legend, paired_bars, split_bar, stacked_bars
    from torchlint.runtime.merge.matching import display_path
    from torchlint.runtime.parameter_reads import by_device, kept, norms, prefixes
    from torchlint.runtime.patches import Patches
    from torchlint.runtime.child.probing import Probe, ProbeDispatch, passes_tensor, tensors_in
    from torchlint.runtime.op_names import op_name
    from torchlint.runtime.profile_trace import LINE_PREFIX, MODULE_PREFIX, analyse, load_events
    from torchlint.runtime.reach import SHOWN, counted, listed, models_in_reach, parameter_label, parameter_names
    from torchlint.runtime.rules import RuntimeRule
    from torchlint.runtime.report.sections import RunSection, where
    from torchlint.runtime.child.steps import on_optimizer_created, step_closure
    from torchlint.runtime.storages import storages
    from torchlint.runtime.child.user_warnings import TargetWarning
