"""Per-file analyses: built once for all the rules that read them, visited first, and a broken
one takes down its readers only (with a TL001 that names them)."""

from __future__ import annotations

import pytest

from torchlint.analysis import Analysis, analyses_for
from torchlint.pluginmanager import hookimpl
from torchlint.rule import Rule
from torchlint.testing import check_sources

SOURCE = "import torch\n\ndef f(x):\n    y = torch.exp(x)\n    return g(y)\n"


class CallCounter(Analysis):
    """Counts the calls seen so far; records every instance built."""

    built: list[CallCounter] = []

    def __init__(self, ctx):
        super().__init__(ctx)
        self.calls = 0
        self.finished = False
        CallCounter.built.append(self)

    def visit_Call(self, node):
        self.calls += 1

    def finish(self):
        self.finished = True


class Exploding(Analysis):
    def visit_Call(self, node):
        raise RuntimeError("analysis broke")


class NeedsCounter(Analysis):
    requires = (CallCounter,)


def reader(code: str, analysis: type[Analysis] = CallCounter, report_in_finish: bool = False) -> type[Rule]:
    """A rule that reports each call with the analysis's count at that moment."""

    class Reader(Rule):
        analyses = (analysis,)
        summary = "reads an analysis"

        def __init__(self, ctx):
            super().__init__(ctx)
            self.counter = ctx.analysis(CallCounter) if analysis is not Exploding else ctx.analysis(Exploding)
            self.seen = []

        def visit_Call(self, node):
            count = getattr(self.counter, "calls", None)
            self.seen.append(count)
            if not report_in_finish:
                self.report(node, f"{self.code} sees {count} call(s)")

        def finish(self):
            if report_in_finish:
                self.report(self.ctx.module, f"{self.code} finished after {self.counter.finished and self.counter.calls}")

    Reader.code, Reader.name = code, f"reader-{code.lower()}"
    return Reader


class Plain(Rule):
    code, name, summary = "XA900", "plain", "reports every call, reads nothing"

    def visit_Call(self, node):
        self.report(node, "a call")


def run(*rules: type[Rule]):
    class Pack:
        @hookimpl
        def torchlint_rules(self):
            return list(rules)

    codes = [rule.code for rule in rules]
    return check_sources({"a.py": SOURCE}, select=[*codes, "TL001"], extra_plugins=[Pack()]).findings


@pytest.fixture(autouse=True)
def fresh_counter():
    CallCounter.built.clear()


def test_one_instance_per_file_shared_by_every_reader_and_visited_before_them():
    findings = run(reader("XA901"), reader("XA902"), reader("XA903"))
    assert len(CallCounter.built) == 1
    # Each rule's visit_Call runs after the analysis has counted that same call.
    assert [(f.code, f.location.line, f.message) for f in findings] == [
        ("XA901", 4, "XA901 sees 1 call(s)"),
        ("XA902", 4, "XA902 sees 1 call(s)"),
        ("XA903", 4, "XA903 sees 1 call(s)"),
        ("XA901", 5, "XA901 sees 2 call(s)"),
        ("XA902", 5, "XA902 sees 2 call(s)"),
        ("XA903", 5, "XA903 sees 2 call(s)"),
    ]


def test_analyses_finish_before_the_rules():
    findings = run(reader("XA901", report_in_finish=True))
    assert [f.message for f in findings] == ["XA901 finished after 2"]


def test_no_reader_running_means_no_analysis_built():
    assert [f.code for f in run(Plain)] == ["XA900", "XA900"]
    assert CallCounter.built == []


def test_a_broken_analysis_skips_its_readers_only_and_names_them():
    findings = run(reader("XA904", Exploding, report_in_finish=True), Plain)
    codes = [f.code for f in findings]
    assert codes.count("XA900") == 2  # the rule that reads nothing is untouched
    assert "XA904" not in codes  # its reader's finish() never ran on a half-built analysis
    (crash,) = [f for f in findings if f.code == "TL001"]
    assert "analysis Exploding raised RuntimeError: analysis broke" in crash.message
    assert crash.message.endswith("skipped for this file: XA904")


def test_asking_for_an_analysis_the_rule_did_not_name_is_a_reported_crash():
    class Undeclared(Rule):
        code, name, summary = "XA905", "undeclared", "forgets to name its analysis"

        def __init__(self, ctx):
            super().__init__(ctx)
            ctx.analysis(CallCounter)

    findings = run(Undeclared, Plain)
    assert [f.code for f in findings] == ["TL001", "XA900", "XA900"]
    assert "name it in the rule's `analyses`" in findings[0].message


def test_required_analyses_are_built_first_and_once():
    class Ctx:
        pass

    class First(Rule):
        analyses = (NeedsCounter,)

    class Second(Rule):
        analyses = (CallCounter, NeedsCounter)

    built = analyses_for([First, Second], Ctx())
    assert list(built) == [CallCounter, NeedsCounter]
    assert len(CallCounter.built) == 1


def test_cyclic_requirements_are_refused():
    class Ping(Analysis):
        pass

    class Pong(Analysis):
        requires = (Ping,)

    Ping.requires = (Pong,)

    class User(Rule):
        analyses = (Ping,)

    with pytest.raises(TypeError, match="cycle: Ping -> Pong -> Ping"):
        analyses_for([User], object())


def test_rule_metadata_must_name_analysis_classes():
    class Wrong(Rule):
        code, name, summary = "XA906", "wrong", "names a non-analysis"
        analyses = (dict,)

    assert "analyses must be a tuple of torchlint.analysis.Analysis subclasses" in Wrong.validate()
