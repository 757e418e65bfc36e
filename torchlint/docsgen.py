"""Generate docs/rules/ from rule metadata: `python -m torchlint.docsgen [--check]`.

The rule reference is never written by hand; a test fails when it is stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

from torchlint.pluginmanager import collect_rules, make_plugin_manager
from torchlint.ruledoc import render_markdown
from torchlint.static.engine_rules import ENGINE_RULES

DOCS = Path(__file__).resolve().parents[1] / "docs" / "rules"


def builtin_rules() -> dict:
    pm = make_plugin_manager()
    rules = dict(ENGINE_RULES)
    for code, rule in collect_rules(pm).items():
        if rule.__module__.startswith("torchlint."):  # built-ins: static rules and runtime codes
            rules[code] = rule
    return dict(sorted(rules.items()))


def render_all() -> dict[str, str]:
    rules = builtin_rules()
    pages = {f"{code}.md": render_markdown(rule) for code, rule in rules.items()}
    index = [
        "# Rule reference",
        "",
        "Generated from each rule's metadata by `python -m torchlint.docsgen`; do not edit by hand.",
        "",
        "| code | name | default | fix | summary |",
        "|---|---|---|---|---|",
    ]
    for code, rule in rules.items():
        summary = rule.summary.replace("|", "\\|")
        index.append(
            f"| [{code}]({code}.md) | {rule.name} | {'on' if rule.default_enabled else 'off'} | {rule.fix_safety or '-'} | {summary} |"
        )
    pages["README.md"] = "\n".join(index) + "\n"
    return pages


def main(argv: list[str]) -> int:
    pages = render_all()
    if "--check" in argv:
        stale = [name for name, text in pages.items() if not (DOCS / name).exists() or (DOCS / name).read_text() != text]
        extra = [p.name for p in DOCS.glob("*.md") if p.name not in pages]
        for name in stale + extra:
            print(f"stale: docs/rules/{name}")
        return 1 if stale or extra else 0
    DOCS.mkdir(parents=True, exist_ok=True)
    for old in DOCS.glob("*.md"):
        if old.name not in pages:
            old.unlink()
    for name, text in pages.items():
        (DOCS / name).write_text(text)
    print(f"wrote {len(pages)} files to docs/rules/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
