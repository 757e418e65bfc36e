"""Compiled profile probe (``torchlint run --compile --profile``): eager next to Inductor, TL724.

While the program runs, the probe keeps a clone of the inputs of the first call of what the
program compiles itself (``compiled_regions`` tells of each compiled call), or else of its
outermost model. After the program has finished (and after the compile and profile probes'
own work), ``torchlint.runtime.compile.profile`` compiles that callable with Inductor and
compares it with eager by user function, line and kernel. Wanted only when both options are
given: a plain run, ``--profile`` alone and ``--compile`` alone never construct it.
"""

from __future__ import annotations

import inspect
import os
from typing import Any

from torchlint.probe import ModelCapture, Probe, ProgramCompiles, Site, describe_inputs

#: At most this many slower functions and lines each become findings (the report lists all).
MOST_FINDINGS = 3
#: The whole compiled call is a finding when it runs at most this fraction of eager's speed.
SLOWER_OVERALL = 0.8


class CompiledProfileProbe(Probe):
    name = "compiled-profile"
    order = 95  # after the compile probe's ladder and the profile probe's analysis
    confirms = ()
    runtime_code = "TL724"
    summary = "eager next to Inductor by user function, line and fused kernel (--compile with --profile)"

    @classmethod
    def wanted(cls, options: dict) -> bool:
        return bool(options.get("compile")) and bool(options.get("profile"))

    def install(self) -> None:
        self.capture = ModelCapture(max_signatures=1)
        self.capture.install()
        self.compiles = ProgramCompiles(max_targets=1, max_signatures=1)
        regions = getattr(self.ctx, "compiled_regions", None)
        if regions is not None:
            regions.listeners.append(self.guarded(self.compiles.note))

    def uninstall(self) -> None:
        self.capture.uninstall()

    def after_run(self) -> None:
        result: dict[str, Any] = {}
        device = self.ctx.device
        targets = self.compiles.targets
        if not device.computes_values or not getattr(device, "times_are_real", True):
            result["skipped"] = f"--device {device.name} does not time real work; compare eager and compiled on cpu or cuda"
        elif targets:
            target = targets[0]
            result.update(target=target.name, inputs=describe_inputs(*target.calls[0]), program_backend=target.backend,
                          called_at=[target.called_at.path, target.called_at.line] if target.called_at else None)
            result.update(self._profile(target.target, target.calls, target.options))
        elif self.capture.root is not None and self.capture.calls:
            model = self.capture.root
            result.update(target=type(model).__name__, inputs=describe_inputs(*self.capture.calls[0]))
            result.update(self._profile(model, self.capture.calls, {}))
        else:
            result["skipped"] = "the program called no nn.Module with parameters and compiled nothing itself"
        if "speedup" in result:
            self._report(result)
        self.ctx.publish(self, result)

    def _profile(self, target: Any, calls: list, options: dict) -> dict[str, Any]:
        from torchlint.probe import CompiledProfile

        try:
            return CompiledProfile(target, calls, frames=self.ctx.frames, options=options,
                                   dump_dir=self.ctx.options.get("report_dir"), progress=self.ctx.progress).run()
        except Exception as exc:  # a compile failure is the compile probe's to report (TL709)
            return {"skipped": f"compiling with Inductor failed: {type(exc).__name__}: {str(exc).strip()[:300]}"}

    # -- findings ---------------------------------------------------------------------------
    def _report(self, result: dict[str, Any]) -> None:
        setting = f"Inductor, {result['mode']}, {result['threads']} thread{'s' * (result['threads'] != 1)}"
        call_site = self._target_site(result)
        if result["speedup"] is not None and result["speedup"] <= SLOWER_OVERALL:
            outside = result["outside_ms"]["compiled"]
            where = ("" if result.get("regions_skipped") else
                     f"; {outside:.3f} ms of the compiled call is outside kernels and operations (guards, graph wrappers, "
                     f"Python between graphs)")
            self.ctx.evidence(
                self, code=None, runtime_code="TL724", at=call_site,
                message=(f"compiled, `{result['target']}` takes {result['compiled_ms']:.3f} ms per call against "
                         f"{result['eager_ms']:.3f} ms eager ({result['speedup']:.2f}x; {setting}){where}"),
                data={"kind": "call", **{k: result[k] for k in ("eager_ms", "compiled_ms", "speedup", "outside_ms")}})
        for region in result.get("slower", ())[: 2 * MOST_FINDINGS]:
            if (call_site is not None and region["kind"] == "function" and result["speedup"] <= SLOWER_OVERALL
                    and (os.path.abspath(region["path"]), region["line"]) == (call_site.path, call_site.line)):
                continue  # the whole call's finding, at the same line, says it
            ratio = f"{region['speedup']:.2f}x" if region.get("speedup") else "no eager time"
            if region["kind"] == "function":
                outside = region.get("compiled_outside_kernels_ms") or 0.0
                detail = (f"; its compiled regions spend {outside:.3f} ms more outside kernels (guards, graph wrappers, "
                          f"eager code between graphs)" if outside >= 0.0005 else "")
                message = (f"compiled, the operations and kernels of `{region['function']}` take {region['compiled_ms']:.3f} ms "
                           f"per call against {region['eager_ms']:.3f} ms eager ({ratio}; {setting}){detail}")
            else:
                kernels = [k["name"] for k in result.get("kernels", ())
                           if any(line["path"] == region["path"] and line["line"] == region["line"] for line in k.get("lines", ()))]
                where = f"; its operations run in {', '.join(kernels[:3])}" if kernels else ""
                message = (f"compiled, this line takes {region['compiled_ms']:.3f} ms per call against "
                           f"{region['eager_ms']:.3f} ms eager ({ratio}; {setting}){where}")
            self.ctx.evidence(self, code=None, runtime_code="TL724", at=Site(region["path"], region["line"], region.get("function", "")),
                              message=message, data=dict(region))

    def _target_site(self, result: dict[str, Any]) -> Site | None:
        """A program's own compile: its first call; the captured model: its forward."""
        if result.get("called_at"):
            return Site(os.path.abspath(result["called_at"][0]), int(result["called_at"][1]), "")
        try:
            forward = type(self.capture.root).forward
            return Site(os.path.abspath(inspect.getsourcefile(forward)), inspect.getsourcelines(forward)[1], "forward")
        except (TypeError, OSError, AttributeError):
            return None


PROBE = CompiledProfileProbe
