"""Helpers for testing rules — torchlint's own and plugin authors'.

    from torchlint.testing import check_sources, case_failures

    def test_my_rule_cases():
        assert case_failures(MyRule, extra_plugins=[my_plugin_module]) == []
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from torchlint.config import Config
from torchlint.findings import Finding
from torchlint.pluginmanager import make_plugin_manager, rule_registry
from torchlint.rule import Bad, Case, Rule
from torchlint.selection import resolve
from torchlint.static.engine import CheckResult, StaticEngine


def check_sources(
    sources: dict[str, str],
    *,
    select: Iterable[str] | None = None,
    extra_plugins: Iterable[object] = (),
    config: Config | None = None,
) -> CheckResult:
    """Run the static engine over in-memory files, as `torchlint check` would."""
    config = config or Config(root=Path.cwd())
    pm = make_plugin_manager()
    for plugin in extra_plugins:
        if not pm.is_registered(plugin):
            pm.register(plugin)
    rules = rule_registry(pm)
    enabled = resolve(rules, list(select) if select is not None else config.select, config.extend_select, config.ignore, where="test")
    return StaticEngine(config, pm, rules, enabled).check_sources(sources)


def case_failures(rule: type[Rule], cases: Iterable[Case] | None = None, extra_plugins: Iterable[object] = ()) -> list[str]:
    """Every way `rule` disagrees with its own cases; an empty list means all pass."""
    failures = []
    for index, case in enumerate(cases if cases is not None else rule.cases):
        result = check_sources(case.sources(), select=[rule.code], extra_plugins=extra_plugins)
        found = {(f.path, f.location.line) for f in result.findings if f.code == rule.code}
        other = [f for f in result.findings if f.code != rule.code]
        expected = case.expected_lines() if isinstance(case, Bad) else set()
        kind = type(case).__name__
        if found != expected:
            failures.append(
                f"{rule.code} case #{index} ({kind}{': ' + case.note if case.note else ''}): "
                f"expected lines {sorted(expected)}, found {sorted(found)}\n{_show(result.findings)}"
            )
        if other:
            failures.append(f"{rule.code} case #{index}: unexpected other findings:\n{_show(other)}")
        if isinstance(case, Bad) and case.fixed:
            failures.extend(_fix_failures(rule, index, case, result.findings))
    return failures


def _fix_failures(rule: type[Rule], index: int, case: Case, findings: list[Finding]) -> list[str]:
    import textwrap

    from torchlint.fix.apply import apply_fixes

    (name, text), = case.sources().items()
    expected = textwrap.dedent(case.fixed).lstrip("\n")
    fixes = [f.fix for f in findings if f.code == rule.code and f.fix is not None]
    attempt = apply_fixes(text, fixes)
    fixed = attempt.text
    problems = []
    if attempt.stale:
        problems.append(f"{rule.code} case #{index}: a fix's edit does not land on the text it was made for")
    if fixed != expected:
        problems.append(f"{rule.code} case #{index}: fixed code differs\n--- got\n{fixed}\n--- expected\n{expected}")
    again = check_sources({name: fixed}, select=[rule.code]).findings
    if any(f.fix is not None for f in again):
        problems.append(f"{rule.code} case #{index}: fixing twice would change the code again")
    return problems


def _show(findings: list[Finding]) -> str:
    return "\n".join(f"  {f.path}:{f.location.line}:{f.location.column}: {f.code} {f.message}" for f in findings)
