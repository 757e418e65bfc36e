"""The README's commands are the ones CI runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```(?:sh|bash|console)\n(.*?)```", text, flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    test_command = ci[-1].strip()
    assert test_command in readme_commands()


def test_readme_lists_every_builtin_rule():
    from torchlint.docsgen import builtin_rules

    text = (ROOT / "README.md").read_text()
    for code, rule in builtin_rules().items():
        assert f"| [{code}](docs/rules/{code}.md) | {rule.name} |" in text, code


def test_readme_links_the_guides():
    text = (ROOT / "README.md").read_text()
    for page in ("docs/user-guide.md", "docs/configuration.md", "docs/plugins.md", "docs/rules/README.md"):
        assert f"]({page}" in text, page
        assert (ROOT / page).exists(), page


def test_ci_runs_the_readme_set_up_commands_verbatim():
    """A fresh clone set up exactly as the README says is what CI tests."""
    text = (ROOT / "README.md").read_text()
    set_up = text[text.index("## Set up"):text.index("\n## ", text.index("## Set up") + 1)]
    commands = [line.strip() for block in re.findall(r"```sh\n(.*?)```", set_up, flags=re.S) for line in block.splitlines() if line.strip()]
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert len(commands) == 3, commands
    assert commands == [line for line in ci if line in commands], "CI must run the README's set-up commands, in order"


def test_the_files_handed_out_first_exist():
    """tests/conftest.py starts each worker on the longest files; a renamed one would quietly
    go back to the end of the queue."""
    import runpy

    listed = runpy.run_path(str(ROOT / "tests" / "conftest.py"))["LONGEST_FIRST"]  # by path: runtime/ has a conftest too
    assert listed and [name for name in listed if not (ROOT / name).is_file()] == []
