from __future__ import annotations

from torchlint import docsgen


def test_rule_docs_are_generated_and_current():
    """Run `python -m torchlint.docsgen` after changing a rule."""
    pages = docsgen.render_all()
    stale = [name for name, text in pages.items() if not (docsgen.DOCS / name).exists() or (docsgen.DOCS / name).read_text() != text]
    extra = [p.name for p in docsgen.DOCS.glob("*.md") if p.name not in pages]
    assert stale == [] and extra == [], "run: python -m torchlint.docsgen"
    readme = docsgen.README.read_text()
    assert readme == docsgen.render_readme(readme), "README rule table is stale: run python -m torchlint.docsgen"


def test_every_rule_doc_has_the_sections_users_expect():
    for code, rule in docsgen.builtin_rules().items():
        docs = rule.docs()
        for section in ("## What it does", "## Why is this bad?"):
            assert section in docs, f"{code} lacks {section}"
        if not code.startswith("TL0"):
            assert "## Example" in docs and "## Use instead" in docs, code
