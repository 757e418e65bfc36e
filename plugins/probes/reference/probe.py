"""The reference probe: records a run's facts (``--save-reference``) and checks this run
against a recorded one (``--reference``) step by step as it goes (imports torch).

Recording is ``facts.Recorder``; the relations and their checks are ``relations``; the file
is ``store``. This module joins them: every recorded step is checked at once, so a run cut
short (``--steps N``, a crash, a timeout) has reported what its steps broke.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import torch

from torchlint.probe import Probe, Site

from . import facts, store
from .relations import Break, Relations, loss_trend

#: Parameter names listed in the model-difference finding.
SHOWN = 5


class ReferenceProbe(Probe):
    name = "reference"
    order = 60
    runtime_code = "TL760"
    summary = "this run against a recorded known-good run (--reference), or recorded as one (--save-reference)"

    @classmethod
    def wanted(cls, options: dict) -> bool:
        return bool(options.get("save_reference") or options.get("reference"))

    def keeps_watching(self, steps: int) -> bool:
        return False  # nothing per torch call: hooks and a few patched functions only

    def install(self) -> None:
        options = self.ctx.options
        # Resolved now: the program may chdir before the run ends.
        self.save_path = os.path.abspath(options["save_reference"]) if options.get("save_reference") else None
        self.reference_path = options.get("reference")
        self.relations: Relations | None = None
        self.program: dict[str, Any] = {}
        if self.reference_path:
            try:
                document = store.load(self.reference_path)
            except store.ReferenceError as exc:  # checked by the command line already; changed since?
                self.ctx.progress(f"--reference: {exc}")
            else:
                self.program = document.get("program") or {}
                self.relations = Relations(store.records_of(document))
        self.records: list[dict[str, Any]] = []
        self.reported: set = set()
        self.broken: list[dict[str, Any]] = []
        self.compared = 0
        self.comparing = self.relations is not None
        self.first = True
        self.script: str | None = None
        self.raised_by: str | None = None
        self.recorder = facts.Recorder(self.ctx.frames, self.ctx.device.computes_values, self.guarded, self.guarded(self._on_record))
        self.recorder.install()

    def uninstall(self) -> None:
        self.recorder.uninstall()

    def raised(self, exc: BaseException) -> None:
        self.raised_by = type(exc).__name__

    # -- each recorded step --------------------------------------------------------------------
    def _on_record(self, record: dict[str, Any]) -> None:
        if self.script is None and sys.argv:
            self.script = os.path.basename(sys.argv[0])
        self.records.append(record)
        if not self.comparing:
            return
        if self.first:
            self.first = False
            if not self._same_program(record):
                self.comparing = False
                return
        self.compared += 1
        for found in self.relations.check(record, self.recorder.modules, self.reported):
            self._report(found)

    def _same_program(self, record: dict[str, Any]) -> bool:
        """TL766 when the reference shares no parameter with this run (another program, or a
        reference with no steps); TL765, once, for parameters added or gone (a new layer):
        their relations are simply not compared."""
        theirs, shapes = self.relations.parameters, self.relations.shapes
        ours = set(record["rows"])
        # The same name with another shape is another layer (two programs that both train an
        # `nn.Sequential` share `Sequential.0.weight`).
        reshaped = sorted(name for name in ours & theirs
                          if name in shapes and name in self.recorder.shapes and shapes[name] != self.recorder.shapes[name])
        same = (ours & theirs) - set(reshaped)
        at = _site(record.get("site"))
        recorded = self.program.get("script") or "another program"
        # Fewer than half of the reference's parameters here, by name and shape: not this
        # program (or all of it renamed), and what little matches would compare noise.
        if not theirs or 2 * len(same) < len(theirs):
            if not theirs:
                why = "it recorded no optimizer step"
            elif same:
                why = (f"only {len(same)} of its {len(theirs)} parameters ({_listed(theirs)}) exist here with the same shape "
                       f"(this run's: {_listed(ours)})")
            else:
                why = f"none of its {len(theirs)} parameters ({_listed(theirs)}) exists here with the same shape (this run's: {_listed(ours)})"
            self.ctx.evidence(
                self, code=None, at=at, runtime_code="TL766",
                message=(f"the reference {self.reference_path} was recorded from {recorded} and {why}: nothing was compared; "
                         f"record this program's own with `--save-reference`"),
                data={"reference": self.reference_path, "recorded_from": self.program},
            )
            return False
        self.relations.excluded = set(reshaped)
        added, gone = sorted(ours - theirs), sorted(theirs - ours)
        if added or gone or reshaped:
            parts = [f"{len(added)} new ({_listed(added)})" if added else "", f"{len(gone)} gone ({_listed(gone)})" if gone else "",
                     f"{len(reshaped)} of another shape ({_shapes(reshaped, shapes, self.recorder.shapes)})" if reshaped else ""]
            self.ctx.evidence(
                self, code=None, at=at, runtime_code="TL765",
                message=(f"the model differs from the reference's: parameters {' and '.join(p for p in parts if p)}; "
                         "relations of those parameters are not compared"),
                data={"added": added, "gone": gone, "reshaped": reshaped},
            )
        return True

    def _report(self, found: Break) -> None:
        self.broken.append({"code": found.code, "step": found.step, "message": found.message,
                            "at": [found.site[0], found.site[1]] if found.site and found.site[0] else None})
        self.ctx.evidence(self, code=None, at=_site(found.site), runtime_code=found.code, message=found.message,
                          data={"step": found.step, **found.data})

    # -- the end -------------------------------------------------------------------------------
    def after_run(self) -> None:
        if self.switched_off:
            # What it recorded stops where its bug was: no reference with a hole in it, no
            # judgement of a curve it saw part of.
            self.comparing = False
        if self.comparing and self.relations is not None:
            trend = loss_trend(self.relations, self.records)
            if trend is not None:
                self._report(trend)
        saved, why_not = None, None
        if self.save_path:
            if self.switched_off:
                why_not = "the probe was switched off by its own error (TL707)"
            elif os.environ.get("RANK", "0") != "0":
                why_not = "rank 0 writes the reference"  # --nproc-per-node: one file, not one per rank
            elif self.raised_by:
                why_not = f"the program raised {self.raised_by}: a reference is a run that went well"
            elif not self.records:
                why_not = "the program made no optimizer step"
            else:
                program = {"script": self.script, "torch": torch.__version__, "device": self.ctx.device.name}
                document = store.document(program, [_portable(r) for r in self.records], self.recorder.parameters,
                                          self.recorder.modules, self.recorder.optimizer_types,
                                          {"first": facts.FIRST, "every": facts.EVERY}, self.recorder.shapes)
                try:
                    store.save(self.save_path, document)
                    saved = self.save_path
                except (OSError, ValueError) as exc:
                    why_not = f"it could not be written ({exc})"
        self.ctx.publish(self, {
            "recorded": len(self.records),
            "last_step": self.records[-1]["step"] if self.records else 0,
            "saved": saved,
            "save_path": self.save_path,
            "not_saved": why_not,
            "reference": self.reference_path,
            "recorded_from": self.program,
            "compared": self.compared,
            "relations": self.relations.count() if self.relations is not None and self.comparing else 0,
            "broken": self.broken,
        })


def _site(site: Any) -> Site | None:
    if not site or not site[0]:
        return None
    return Site(site[0], int(site[1]), "")


def _listed(names: Any) -> str:
    names = sorted(names)
    shown = ", ".join(f"`{name}`" for name in names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def _shapes(names: list[str], before: dict[str, list[int]], now: dict[str, list[int]]) -> str:
    shown = ", ".join(f"`{name}` {tuple(before[name])} -> {tuple(now[name])}" for name in names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def _portable(record: dict[str, Any]) -> dict[str, Any]:
    """Paths relative to where torchlint runs, so a reference recorded in one checkout reads
    the same in another (CI); only the messages show them."""
    def relative(path: Any) -> Any:
        if not isinstance(path, str):
            return path
        relative_path = os.path.relpath(path)
        return path if relative_path.startswith("..") else relative_path

    out = dict(record)
    out["events"] = [[kind, relative(path), line] for kind, path, line in record["events"]]
    if record.get("site"):
        out["site"] = [relative(record["site"][0]), record["site"][1]]
    out["forward"] = {label: {**entry, "at": [relative(entry["at"][0]), entry["at"][1]],
                              **({"switch": [entry["switch"][0], relative(entry["switch"][1]), entry["switch"][2]]} if entry.get("switch") else {})}
                      for label, entry in record["forward"].items()}
    return out


PROBE = ReferenceProbe
