"""Run the rules that want one parsed file: their analyses, the single traversal, finish().

Failures stay local: a rule that raises is reported (TL001) and dropped for the file while
the others go on; an analysis that raises takes down only the rules that read it, since
what they would read is incomplete.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from torchlint.analysis import Analysis, analyses_for
from torchlint.static.engine_rules import RuleCrashed, engine_finding
from torchlint.static.walker import Dispatcher

if TYPE_CHECKING:
    from torchlint.findings import Finding
    from torchlint.rule import Rule
    from torchlint.static.context import FileContext


def run_rules(ctx: FileContext, rules: list[type[Rule]], interrupt: Callable[[], None] | None = None) -> list[Finding]:
    """Walk `ctx.module` once for `rules`; their reports land in `ctx`. Returns the crashes.

    `interrupt` is called between top-level statements and between the rules' `finish()`:
    raising from it (a BaseException such as torchlint.static.interrupt.CheckInterrupted,
    which no rule's failure handling catches) abandons the file."""
    crashes: list[Finding] = []

    def crashed(label: str, exc: BaseException, skipped: list[str] = ()) -> None:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        note = f"; skipped for this file: {', '.join(skipped)}" if skipped else ""
        message = f"{label} raised {type(exc).__name__}: {exc} at {Path(where.filename).name}:{where.lineno}{note}"
        crashes.append(engine_finding(RuleCrashed, ctx.path, message))

    try:
        ctx.analyses = analyses_for(rules, ctx)
    except Exception as exc:
        crashed("building the analyses", exc, [rule.code for rule in rules if rule.analyses])
        rules = [rule for rule in rules if not rule.analyses]
    instances = []
    for rule in rules:
        try:
            instances.append(rule(ctx))
        except Exception as exc:
            crashed(_label(rule), exc)

    def on_error(target: object, exc: BaseException, node: object) -> None:
        if not isinstance(target, Analysis):
            crashed(_label(type(target)), exc)
            return
        broken = _requiring(type(target), ctx.analyses)
        readers = [r for r in instances if broken & set(type(r).analyses) and dispatcher.is_active(r)]
        for dependent in [*(ctx.analyses[cls] for cls in broken), *readers]:
            dispatcher.remove(dependent)
        crashed(_label(type(target)), exc, [r.code for r in readers])

    # Analyses first: a rule's handler for a node sees them already updated for that node.
    dispatcher = Dispatcher([*ctx.analyses.values(), *instances], on_error, ancestors=ctx.ancestors)
    dispatcher.walk_module(ctx.module, interrupt)
    for target in [*ctx.analyses.values(), *instances]:
        if interrupt is not None:
            interrupt()
        if dispatcher.is_active(target):  # not after a crash: its state is half-built
            try:
                target.finish()
            except Exception as exc:
                on_error(target, exc, ctx.module)
    return crashes


def _label(kind: type) -> str:
    return f"analysis {kind.__name__}" if issubclass(kind, Analysis) else f"{kind.__name__} ({kind.code})"


def _requiring(failed: type[Analysis], analyses: dict[type[Analysis], Analysis]) -> set[type[Analysis]]:
    """`failed` and every built analysis that requires it, directly or not."""
    broken = {failed}
    changed = True
    while changed:
        changed = False
        for cls in analyses:
            if cls not in broken and broken & set(cls.requires):
                broken.add(cls)
                changed = True
    return broken
