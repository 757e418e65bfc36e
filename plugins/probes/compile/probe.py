"""Compile probe (``torchlint run --compile[=eager|aot_eager|inductor]``): TL708-TL711.

While the program runs, the probe captures the outermost ``nn.Module`` it calls and clones
of the inputs of its first calls (one per input shape, up to three), and keeps Dynamo's
structured trace of any ``torch.compile`` the program does itself. After the program has
finished, it compiles the captured model up the backend ladder (``eager`` -> ``aot_eager``
-> ``inductor``, the last only when asked) and reports graph breaks, recompilations, the
first failing stage, eager-vs-compiled accuracy and speed. Nothing here can take the run
down: a failing compile is a finding, and a crash of the probe itself is TL707.
"""

from __future__ import annotations

import os
from typing import Any

from torchlint.runtime.compile_capture import ModelCapture, describe_inputs
from torchlint.runtime.compile_check import LADDER, CompileChecker, TraceCollector, inductor_cache_dir, summarise_trace
from torchlint.runtime.frames import USER, Site
from torchlint.runtime.probing import Probe


class CompileProbe(Probe):
    name = "compile"
    order = 80
    confirms = ()
    runtime_code = "TL708"
    summary = "torch.compile health of the model the program runs: graph breaks, backend ladder, accuracy, speed"

    @classmethod
    def wanted(cls, options: dict) -> bool:
        return options.get("compile") in LADDER

    def install(self) -> None:
        self.backend = self.ctx.options["compile"]
        if self.backend == "inductor":
            os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", inductor_cache_dir())
        self.capture = ModelCapture(max_signatures=3)
        self.capture.install()
        # Graph breaks of a torch.compile the program does itself are reported too.
        self.collector = TraceCollector()
        self.collector.install()
        self.program_records: list = []

    def uninstall(self) -> None:
        self.capture.uninstall()
        self.collector.uninstall()
        self.program_records = self.collector.take()

    def _is_user(self, path: str) -> bool:
        return self.ctx.frames.verdict(path) == USER

    def after_run(self) -> None:
        result: dict[str, Any] = {"backend": self.backend, "ladder": list(LADDER[: LADDER.index(self.backend) + 1])}
        model = self.capture.root
        if not self.ctx.device.computes_values:
            result["skipped"] = f"--device {self.ctx.device.name} computes no values; run --compile on cpu or cuda"
        elif model is None:
            result["skipped"] = "the program called no nn.Module with parameters"
        else:
            result["model"] = type(model).__name__
            result["inputs"] = describe_inputs(*self.capture.calls[0])
            result["input_shapes"] = len(self.capture.calls)
            # Under fake-cuda the clock would time the CPU standing in for the GPU: no speed-up.
            timed = getattr(self.ctx.device, "times_are_real", True)
            checker = CompileChecker(model, self.capture.calls, top=self.backend, is_user=self._is_user,
                                     progress=self.ctx.progress, collector=self.collector, measure_speed=timed)
            result.update(checker.run())
            if not timed:
                result["speed_skipped"] = f"--device {self.ctx.device.name} runs on the CPU, not a GPU: no speed-up measured"
        program = summarise_trace(self.program_records)
        if program["graph_breaks"] or program["recompilations"]:
            result["graph_breaks"] = _merge(result.get("graph_breaks", []), program["graph_breaks"], ("path", "line", "reason"))
            result["recompilations"] = _merge(result.get("recompilations", []), program["recompilations"], ("path", "line", "function"))
            result["program_compiled"] = True
        self._report(result)
        self.ctx.publish(self, result)

    # -- findings ---------------------------------------------------------------------------
    def _report(self, result: dict[str, Any]) -> None:
        for gb in result.get("graph_breaks", []):
            ref = f" [{gb['ref']}]" if gb.get("ref") else ""
            times = f" ({gb['count']}x)" if gb.get("count", 1) > 1 else ""
            hint = f"; hint: {gb['hints'][0]}" if gb.get("hints") else ""
            self.ctx.evidence(self, code=None, runtime_code="TL708", at=_site(gb["path"], gb["line"]),
                              message=f"graph break{times}: {gb['reason']}{ref}{hint}", data=dict(gb))
        for rc in result.get("recompilations", []):
            reasons = "; ".join(rc["reasons"][:2]) or "a guard failed"
            self.ctx.evidence(self, code=None, runtime_code="TL711", at=_site(rc["path"], rc["line"]),
                              message=f"torch.compile recompiled `{rc['function']}` {rc['count']}x: {reasons}", data=dict(rc))
        failure = result.get("failure")
        if failure:
            at = failure.get("at")
            site = _site(*at) if at else self._model_site()
            passed = [r["backend"] for r in result["rungs"] if r["status"] == "ok"]
            after = f" ({', '.join(passed)} worked)" if passed else ""
            self.ctx.evidence(self, code=None, runtime_code="TL709", at=site,
                              message=f"torch.compile failed in {failure['stage']} (backend {failure['backend']}){after}: "
                                      f"{failure['error']}: {failure['message']}",
                              data={k: v for k, v in failure.items() if k != "_records"})
        accuracy = result.get("accuracy")
        if accuracy and not accuracy.get("ok"):
            detail = accuracy.get("detail") or (
                f"max abs error {accuracy['max_abs']:.3g}, max rel error {accuracy['max_rel']:.3g} in output {accuracy.get('index', 0)} "
                f"({accuracy.get('dtype')}; tolerance rtol={accuracy.get('rtol'):g}, atol={accuracy.get('atol'):g})")
            self.ctx.evidence(self, code=None, runtime_code="TL710", at=self._model_site(),
                              message=f"output compiled with backend {accuracy.get('backend')} differs from eager on the captured inputs "
                                      f"{result.get('inputs', '')}: {detail}", data=dict(accuracy))

    def _model_site(self) -> Site | None:
        """The model's forward, where a whole-model finding points."""
        import inspect

        model = self.capture.root
        try:
            forward = type(model).forward
            path = inspect.getsourcefile(forward)
            line = inspect.getsourcelines(forward)[1]
            return Site(os.path.abspath(path), line, "forward")
        except (TypeError, OSError, AttributeError):
            return None


def _site(path: str, line: int) -> Site:
    return Site(os.path.abspath(path), int(line), "")


def _merge(first: list[dict], second: list[dict], key: tuple[str, ...]) -> list[dict]:
    merged: dict[tuple, dict] = {}
    for item in [*first, *second]:
        k = tuple(item[name] for name in key)
        if k in merged:
            merged[k]["count"] += item["count"]
        else:
            merged[k] = dict(item)
    return list(merged.values())


PROBE = CompileProbe
