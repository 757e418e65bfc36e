"""The documentation is generated where it can be, and every command it shows is run."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import doc_console  # tests/doc_console.py
import pytest

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


# --- every command the documentation shows is run, and prints what the page shows ---------

ROOT = Path(__file__).resolve().parents[1]
#: The pages whose console blocks are run. docs/rules/ is generated and shows no commands.
DOCUMENTS = doc_console.DOCUMENTS
HAS_TORCH = importlib.util.find_spec("torch") is not None


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name in DOCUMENTS if name not in doc_console.PAGES_RUN_APART])
def test_every_command_a_page_shows_prints_what_the_page_shows(name, tmp_path, request):
    """The compile page runs in test_docs_compile_page.py: as long as these four together, it
    is a file of its own so that xdist (``--dist loadfile``) can run it beside them."""
    failures = doc_console.run_named_page(name, tmp_path, runtime=HAS_TORCH,
                                          inductor_cache=doc_console.shared_inductor_cache(request.config))
    assert not failures, f"{name} is stale (python tests/doc_console.py {name} shows the real output):\n" + "\n".join(map(str, failures))


def test_every_page_is_run_by_one_test_file():
    assert set(doc_console.PAGES_RUN_APART) < set(DOCUMENTS)
    apart = (ROOT / "tests" / "test_docs_compile_page.py").read_text()
    assert all(repr(name) in apart or f'"{name}"' in apart for name in doc_console.PAGES_RUN_APART)


def test_commands_outside_console_blocks_are_the_set_up_commands_ci_runs():
    """A command in a `sh` block is not run by the docs test; only the set-up commands, which
    .ci/run runs verbatim on a clean clone, may live there."""
    ci = {line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()}
    for name in DOCUMENTS:
        for block in re.findall(r"```(?:sh|bash|shell)\n(.*?)```", (ROOT / name).read_text(), flags=re.S):
            for line in block.splitlines():
                if line.strip() and not line.lstrip().startswith("#"):
                    assert line.strip() in ci, f"{name}: `{line.strip()}` is in a sh block: show it in a console block"


def test_skipped_console_blocks_say_why():
    for name in DOCUMENTS:
        for step in doc_console.steps((ROOT / name).read_text()):
            assert step.skip is None or len(step.skip) > 20, f"{name}:{step.doc_line}: say why the block is not run"


@pytest.mark.parametrize("name", DOCUMENTS)
def test_relative_links_and_images_exist(name):
    page = ROOT / name
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
        if "://" in target:
            continue
        assert (page.parent / target).exists(), f"{name} links to {target}, which does not exist"


def test_the_harness_runs_commands_and_compares(tmp_path):
    page = "<!-- docs-test: file notes/a.txt -->\n```text\nhello\n```\n\n```console\n$ cat notes/a.txt\nhello\n$ echo took 1.25 s\ntook 9 s\n$ printf 'one\\ntwo\\nthree\\n'\none\n...\nthree\n```\n"
    (tmp_path / "work").mkdir()
    assert doc_console.run_document(page, tmp_path / "work") == []
    wrong = page.replace("hello\n```\n", "hello\n```\n", 1).replace("$ cat notes/a.txt\nhello", "$ cat notes/a.txt\ngoodbye")
    failures = doc_console.run_document(wrong, tmp_path / "work")
    assert [f.command.line for f in failures] == ["cat notes/a.txt"]
    assert failures[0].actual == "hello"


def test_the_harness_skips_what_it_is_told_to_skip(tmp_path):
    page = "<!-- docs-test: skip needs a GPU, which the test machine lacks -->\n```console\n$ false\nnever printed\n```\n"
    (tmp_path / "work").mkdir()
    assert doc_console.run_document(page, tmp_path / "work") == []
    assert doc_console.commands_in(page) == ["false"]


@pytest.mark.parametrize("cold", ["", "1"])
def test_a_page_runs_its_torchlint_commands_warm_unless_told_cold(tmp_path, monkeypatch, cold):
    """TORCHLINT_TEST_COLD=1 starts every command as a fresh process: no warm `torchlint`
    goes first on the page's PATH (a page without torchlint commands starts no server)."""
    monkeypatch.setenv("TORCHLINT_TEST_COLD", cold)
    page = "```console\n$ echo \"$PATH\" | cut -d: -f1 | xargs basename\nwarm-bin\n```\n"
    failures = doc_console.run_page(page, tmp_path, runtime=True)
    warm = HAS_TORCH and not cold
    assert [f.actual for f in failures] == ([] if warm else ["bin"])  # the interpreter's bin folder
