"""Rule documentation from rule metadata: `torchlint rule`, docs/rules/*.md, SARIF help."""

from __future__ import annotations

import textwrap

from torchlint.rule import Bad, Rule


def render_markdown(rule: type[Rule]) -> str:
    fixable = {None: "no fix", "safe": "safe fix available", "unsafe": "unsafe fix available"}[rule.fix_safety]
    parts = [
        f"# {rule.code}: {rule.name}",
        "",
        f"{rule.summary}.",
        "",
        f"- Default: {'on' if rule.default_enabled else 'off (enable with `--select ' + rule.code + '`)'}"
        + (" — reported by `torchlint run` only" if rule.runtime_only else ""),
        f"- Severity: {rule.severity.value}",
        f"- Fix: {fixable}",
        f"- Suppress: `# noqa: {rule.code}` or `# torchlint: disable={rule.name}`",
        "",
        rule.docs(),
    ]
    bad = [case for case in rule.cases if isinstance(case, Bad)]
    good = [case for case in rule.cases if not isinstance(case, Bad)]
    for title, cases in (("Flagged", bad), ("Not flagged", good)):
        if not cases:
            continue
        parts += ["", f"## {title}", ""]
        for case in cases:
            if case.note:
                parts.append(f"{case.note[:1].upper()}{case.note[1:]}:")
                parts.append("")
            for name, text in case.sources().items():
                if len(case.sources()) > 1:
                    parts.append(f"`{name}`:")
                parts += ["```python", text.rstrip("\n"), "```", ""]
    return "\n".join(parts).rstrip() + "\n"


def render_terminal(rule: type[Rule]) -> str:
    return render_markdown(rule)


def rule_table(rules: dict[str, type[Rule]]) -> str:
    rows = [("code", "name", "default", "fix", "summary")]
    for code, rule in rules.items():
        rows.append((code, rule.name, "on" if rule.default_enabled else "off", rule.fix_safety or "-", rule.summary))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = []
    for row in rows:
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4])
    return "\n".join(lines) + "\n"


def wrap(text: str) -> str:
    return "\n".join(textwrap.fill(p, 88) for p in text.split("\n"))
