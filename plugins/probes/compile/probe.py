"""Compile probe (``torchlint run --compile[=eager|aot_eager|inductor]``): TL708-TL711.

What the ladder checks: each function or module the program compiles itself (``torch.compile``,
``module.compile()``, up to three, in the order of their first calls); failing those, the
outermost ``nn.Module`` with parameters the program calls. While the program runs, the probe
keeps clones of their inputs (one per input shape, up to three) and Dynamo's structured
trace of the program's own compiles. After the program has finished, it compiles each
target up the backend ladder (``eager`` -> ``aot_eager`` -> ``inductor``; Inductor when
asked, or when the program compiled that target with Inductor, torch.compile's default) and
reports graph breaks, recompilations, the first failing stage, eager-vs-compiled accuracy
and speed. A finding about a program's own compile points at its first call of the compiled
callable. Nothing here can take the run down: a failing compile is a finding, and a crash
of the probe itself is TL707.
"""

from __future__ import annotations

import os
import time
from typing import Any

from torchlint.probe import (
    LADDER, USER, CompileChecker, ModelCapture, Probe, ProgramCompiles, Site, TraceCollector,
    describe_inputs, inductor_cache_dir, minified_note, summarise_trace,
)

#: How many of the program's own compiled callables the ladder checks (each costs compiles).
MAX_TARGETS = 3
#: Seconds of the run's --timeout kept for the report when --minify's budget is cut to fit.
REPORT_MARGIN_S = 15.0


class CompileProbe(Probe):
    name = "compile"
    order = 80
    confirms = ()
    runtime_code = "TL708"
    summary = "torch.compile health of the model the program runs: graph breaks, backend ladder, accuracy, speed"

    @classmethod
    def wanted(cls, options: dict) -> bool:
        return options.get("compile") in LADDER or bool(options.get("minify"))

    def install(self) -> None:
        # `--minify` alone: the ladder up to Inductor, whose failures are what it shrinks.
        self.backend = self.ctx.options.get("compile") or "inductor"
        self.minify_folder = _minify_folder(self.ctx.options) if self.ctx.options.get("minify") else None
        if self.backend == "inductor":
            os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", inductor_cache_dir())
        self.capture = ModelCapture(max_signatures=3)
        self.capture.install()
        # The program's own torch.compile calls: their targets and inputs (compiled_regions).
        self.compiles = ProgramCompiles(max_targets=MAX_TARGETS, max_signatures=3)
        regions = getattr(self.ctx, "compiled_regions", None)
        if regions is not None:
            regions.listeners.append(self.guarded(self.compiles.note))
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
        result = self._result(self.backend)
        targets = self.compiles.targets
        model = self.capture.root
        if not self.ctx.device.computes_values:
            result["skipped"] = f"--device {self.ctx.device.name} computes no values; run --compile on cpu or cuda"
        elif targets:
            checked = [self._check(target) for target in targets]
            result = checked[0]
            if len(checked) > 1:
                result["more"] = checked[1:]
            if self.compiles.left_out:
                result["not_checked"] = self.compiles.left_out
        elif model is None:
            result["skipped"] = "the program called no nn.Module with parameters and compiled nothing itself"
        else:
            result["model"] = type(model).__name__
            result["inputs"] = describe_inputs(*self.capture.calls[0])
            result["input_shapes"] = len(self.capture.calls)
            result.update(self._ladder(model, self.capture.calls, self.backend, {}, result["model"]))
        program = summarise_trace(self.program_records, self._is_user)
        if program["graph_breaks"] or program["recompilations"]:
            result["graph_breaks"] = _merge(result.get("graph_breaks", []), program["graph_breaks"], ("path", "line", "reason"))
            result["recompilations"] = _merge(result.get("recompilations", []), program["recompilations"], ("path", "line", "function"))
            result["program_compiled"] = True
        self._report(result)
        for more in result.get("more", ()):
            self._report(more)
        self.ctx.publish(self, result)

    def _result(self, top: str) -> dict[str, Any]:
        return {"backend": top, "ladder": list(LADDER[: LADDER.index(top) + 1])}

    def _ladder(self, model: Any, calls: list, top: str, options: dict, name: str) -> dict[str, Any]:
        # Under fake-cuda the clock would time the CPU standing in for the GPU: no speed-up.
        timed = getattr(self.ctx.device, "times_are_real", True)
        checker = CompileChecker(model, calls, top=top, is_user=self._is_user, progress=self.ctx.progress,
                                 collector=self.collector, measure_speed=timed, options=options)
        result = checker.run()
        if not timed:
            result["speed_skipped"] = f"--device {self.ctx.device.name} runs on the CPU, not a GPU: no speed-up measured"
        if self.minify_folder is not None:
            self._minify(model, calls, result, name)
        return result

    def _minify(self, model: Any, calls: list, result: dict[str, Any], name: str) -> None:
        """`--minify`: shrink the graph Inductor failed on, in a bounded process of its own
        (imported only now: a run whose ladder found nothing never loads it)."""
        from torchlint.probe import minify, minify_kind

        kind, why_not = minify_kind(result)
        if kind is None:  # nothing failed in Inductor: nothing to shrink
            if why_not:
                result["minify"] = {"status": "not attempted", "reason": why_not}
            return
        folder = os.path.join(self.minify_folder, _safe(name))
        budget = float(self.ctx.options.get("minify_timeout") or 120.0)
        deadline = getattr(self.ctx, "deadline", None)
        cut = None
        if deadline is not None and deadline - time.monotonic() - REPORT_MARGIN_S < budget:
            # The run's own --timeout comes first: what the ladder found must still be reported.
            cut = budget = max(0.0, round(deadline - time.monotonic() - REPORT_MARGIN_S, 1))
        try:
            if budget < 5:
                record = {"status": "not attempted", "reason": "the run's --timeout leaves no time to minify: raise --timeout"}
            else:
                record = minify(model, calls, result, folder=folder, timeout=budget, is_user=self._is_user, progress=self.ctx.progress)
        except Exception as exc:  # the ladder's findings stand without it
            record = {"status": "failed", "reason": f"{type(exc).__name__}: {exc}"[:300], "folder": folder}
        if record is not None:
            record["report_dir"] = self.ctx.options.get("report_dir")
            if cut is not None:
                record["budget_cut"] = f"--minify-timeout cut to {cut:g} s by the run's --timeout"
            result["minify"] = record

    def _check(self, target: Any) -> dict[str, Any]:
        """The ladder on one callable the program compiled, up to the backend it used."""
        top = self.backend
        if target.backend in LADDER and LADDER.index(target.backend) > LADDER.index(top):
            top = target.backend  # the program compiles with Inductor: so does the ladder
        result = self._result(top)
        result.update(model=target.name, inputs=describe_inputs(*target.calls[0]), input_shapes=len(target.calls),
                      program_backend=target.backend, compiled_at=_where(target.defined_at), called_at=_where(target.called_at))
        result.update(self._ladder(target.target, target.calls, top, target.options, target.name))
        return result

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
            site = _site(*at) if at else self._target_site(result)
            passed = [r["backend"] for r in result["rungs"] if r["status"] == "ok"]
            after = f" ({', '.join(passed)} worked)" if passed else ""
            self.ctx.evidence(self, code=None, runtime_code="TL709", at=site,
                              message=f"torch.compile failed in {failure['stage']} (backend {failure['backend']}){after}: "
                                      f"{failure['error']}: {failure['message']}{minified_note(result.get('minify'))}",
                              data={k: v for k, v in failure.items() if k != "_records"} | _minify_data(result))
        accuracy = result.get("accuracy")
        if accuracy and not accuracy.get("ok"):
            detail = accuracy.get("detail") or (
                f"max abs error {accuracy['max_abs']:.3g}, max rel error {accuracy['max_rel']:.3g} in output {accuracy.get('index', 0)} "
                f"({accuracy.get('dtype')}; tolerance rtol={accuracy.get('rtol'):g}, atol={accuracy.get('atol'):g})")
            what = f"of `{result['model']}` " if result.get("called_at") else ""
            compiled_at = f" (torch.compile at line {result['compiled_at'][1]})" if result.get("compiled_at") else ""
            self.ctx.evidence(self, code=None, runtime_code="TL710", at=self._target_site(result),
                              message=f"output {what}compiled with backend {accuracy.get('backend')} differs from eager on the "
                                      f"captured inputs {result.get('inputs', '')}{compiled_at}: {detail}"
                                      f"{minified_note(result.get('minify'))}", data=dict(accuracy) | _minify_data(result))

    def _target_site(self, result: dict[str, Any]) -> Site | None:
        """A program's own compile: its first call; the captured model: its forward."""
        if result.get("called_at"):
            return _site(*result["called_at"])
        return self._model_site()

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


def _minify_folder(options: dict) -> str:
    """Where `--minify` writes: the `--report` folder when there is one, else ./torchlint-minify."""
    if options.get("report_dir"):
        return os.path.join(options["report_dir"], "minify")
    return os.path.join(os.getcwd(), "torchlint-minify")


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "model"


def _minify_data(result: dict[str, Any]) -> dict[str, Any]:
    return {"minify": result["minify"]} if result.get("minify") else {}


def _where(site: Site | None) -> list | None:
    return [site.path, site.line] if site is not None else None


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
