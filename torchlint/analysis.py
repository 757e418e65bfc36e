"""Per-file analyses: facts several rules read, computed once per file.

Some questions are asked by more than one rule: "where do softmax probabilities flow?" is
the core of TL101, TL102 and TL107. Answering it inside each rule would walk the same
dataflow three times. An analysis answers it once: the engine builds one instance per file
for all the rules that name it in ``Rule.analyses``, and only when one of those rules runs.

An analysis is visited like a rule (``visit_<Node>`` / ``leave_<Node>`` during the engine's
single traversal, before any rule's handler for the same node) and finished before the
rules' ``finish()``. Rules get the file's instance with ``self.ctx.analysis(cls)``. If an
analysis raises, the rules that read it are skipped for that file (with a TL001 finding),
since what they would read is incomplete.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from torchlint.static.context import FileContext


class Analysis:
    #: Analyses this one reads through ``self.ctx.analysis(...)``: built and visited first.
    requires: ClassVar[tuple[type[Analysis], ...]] = ()

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx

    def finish(self) -> None:
        """Called once after the traversal, before any rule's ``finish()``."""


def analyses_for(rules: list[type], ctx: FileContext) -> dict[type[Analysis], Analysis]:
    """One instance of every analysis the rules name (and those need), dependencies first."""
    built: dict[type[Analysis], Analysis] = {}

    def build(cls: type[Analysis], chain: tuple[type, ...]) -> None:
        if cls in built:
            return
        if cls in chain:
            raise TypeError(f"analyses require each other in a cycle: {' -> '.join(c.__name__ for c in (*chain, cls))}")
        for required in cls.requires:
            build(required, (*chain, cls))
        built[cls] = cls(ctx)

    for rule in rules:
        for cls in getattr(rule, "analyses", ()):
            build(cls, ())
    return built
