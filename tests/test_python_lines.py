"""Line numbers are Python's everywhere: a line ends at "\\r\\n", "\\r" or "\\n" only.

`str.splitlines()` also ends one at "\\f", "\\v", "\\x1c"-"\\x1e", "\\x85", U+2028 and U+2029.
A form feed on its own line (an Emacs page break), or one of the others in a comment or a
string, then shifted every line after it: a `# noqa` silenced the next line's finding, the
`full` snippet and the baseline quoted the wrong line, the diff's hunks were misnumbered.
"""

from __future__ import annotations

import asyncio
import json
import linecache
import re

import pytest
from click.testing import CliRunner

from torchlint.cli import main
from torchlint.static.lines import python_lines
from torchlint.testing import check_sources

HEAD = "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n"
# Each puts one character str.splitlines() breaks at, and Python does not, above the findings.
ODD = {
    "form-feed-line": "\x0c\n",
    "vertical-tab-comment": "# a \x0b b\n",
    "x1c-comment": "# a \x1c b\n",
    "nel-string": 's = "a \x85 b"\n',
    "u2028-comment-and-string": '# a \u2028 b\nt = "\u2029"\n',
}
BODY = "a = torch.log(1 + x)\nb = torch.exp(x) - 1  # noqa: TL402\nc = torch.load(p, weights_only=True)\n"


def source(odd: str) -> str:
    return HEAD + odd + BODY


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(python_lines(text), start=1) if needle in line)


@pytest.mark.parametrize(
    "text",
    ["", "a", "a\n", "a\r\nb\rc\n", "\n\n", "x\r\n\r\n", "a\x0cb\x1c\x85\u2028c\nd\x0b\n", "\r"],
)
def test_python_lines_split_where_python_does(text):
    expected = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if expected[-1] == "":
        expected.pop()
    assert python_lines(text) == expected
    assert "".join(python_lines(text, keepends=True)) == text
    assert len(python_lines(text, keepends=True)) == len(expected)


@pytest.mark.parametrize("odd", ODD.values(), ids=ODD.keys())
def test_a_noqa_silences_its_own_line_only(odd):
    text = source(odd)
    found = check_sources({"a.py": text}, select=["TL301", "TL401", "TL402", "TL003"]).findings
    assert sorted((f.code, f.location.line) for f in found) == [
        ("TL301", line_of(text, "c = ")),
        ("TL401", line_of(text, "a = ")),
    ]


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    # TL401 and TL402 (off by default) are the rules these files trip on each odd line
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nextend-select = ["TL401", "TL402"]\n')

    def invoke(*args):
        return CliRunner().invoke(main, ["check", "--no-cache", *args], catch_exceptions=False)

    return invoke


@pytest.mark.parametrize("odd", ODD.values(), ids=ODD.keys())
def test_add_noqa_then_the_check_passes(run, tmp_path, odd):
    (tmp_path / "m.py").write_bytes(source(odd).encode())
    added = run("--add-noqa", "m.py")
    assert added.exit_code == 0, added.output
    after = (tmp_path / "m.py").read_bytes().decode()
    assert "a = torch.log(1 + x)  # noqa: TL401\n" in after
    assert "c = torch.load(p, weights_only=True)  # noqa: TL301\n" in after
    again = run("m.py")
    assert again.exit_code == 0, again.output
    assert "TL003" not in again.output


def test_the_full_snippet_quotes_the_flagged_line(run, tmp_path):
    text = source(ODD["form-feed-line"])
    (tmp_path / "m.py").write_bytes(text.encode())
    out = run("--select", "TL401", "m.py").output
    assert f"{line_of(text, 'a = ')} | a = torch.log(1 + x)" in out


def test_a_fix_and_its_diff_land_on_python_lines(run, tmp_path):
    text = source(ODD["x1c-comment"])
    (tmp_path / "m.py").write_bytes(text.encode())
    diff = run("--select", "TL401,TL402", "--diff", "m.py").output
    # one hunk over the 5-line file; splitlines counted 6 lines
    hunk = re.search(r"^@@ -(\d+),(\d+) \+(\d+),(\d+) @@", diff, re.M)
    assert hunk is not None and hunk.groups() == ("1", "5", "1", "5"), diff
    run("--select", "TL401,TL402", "--fix", "m.py")
    # TL402 carries a noqa on its own line: silenced, so not fixed either
    assert (tmp_path / "m.py").read_bytes().decode() == text.replace("torch.log(1 + x)", "torch.log1p(x)")


def test_a_page_break_above_a_baselined_finding_keeps_it_baselined(run, tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "m.py").write_text(HEAD + BODY)
    assert run("--select", "TL301", "--write-baseline", "base.json", ".").exit_code == 0
    (tmp_path / "m.py").write_bytes((HEAD + "\x0c\n" + BODY).encode())
    checked = run("--select", "TL301", "--baseline", "base.json", ".")
    assert checked.exit_code == 0, checked.output


def test_rule_examples_mark_python_lines():
    from torchlint.rule import Bad

    case = Bad('import torch\n# \x0c\nx = torch.load(p)  # error\n')
    assert case.expected_lines() == {("example.py", 3)}


def test_a_notebook_run_quotes_python_lines(tmp_path, monkeypatch):
    import torchlint.runtime.child.notebook_run as notebook_run

    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": ["# \x0c page\n", "x = 1\n", "y = 2\n"]}
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    monkeypatch.setattr(notebook_run, "exec", lambda *a: None, raising=False)
    notebook_run.run_notebook(path)
    assert linecache.getline(str(path), 3).strip() == "y = 2"


def test_the_server_puts_diagnostics_on_python_lines(tmp_path):
    pytest.importorskip("lsprotocol")
    from lsp_session import ServerSession

    text = source(ODD["u2028-comment-and-string"])
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n\n[tool.torchlint]\nextend-select = ["TL401"]\n')
    (tmp_path / "m.py").write_bytes(text.encode())

    async def scenario():
        session = ServerSession(tmp_path, {"debounceMs": 30})
        await session.start()
        try:
            session.open("m.py")
            published = await session.latest("m.py")
            await session.stop()
            return published
        finally:
            if session.client._server.returncode is None:
                await session.kill()

    published = asyncio.run(scenario())
    got = sorted((d.code, d.range.start.line) for d in published.diagnostics)
    assert got == [("TL301", line_of(text, "c = ") - 1), ("TL401", line_of(text, "a = ") - 1)]


@pytest.mark.parametrize("script", [
    'import torch\n\ndef main(x):\n    return x.cuda()\n\nif __name__ == "__main__":\n    main(torch.ones(1))\n',
    'import argparse\nimport torch\n\ndef main(x):\n    return x.cuda()\n',
])
@pytest.mark.parametrize("ending", ["\r\n", "\r"])
def test_a_script_is_a_script_whatever_its_line_endings(script, ending):
    """TL203 leaves scripts alone; with lone-CR endings re's `^` saw no `__main__` guard."""
    def found(text):
        return [(f.code, f.location.line) for f in check_sources({"train.py": text}, select=["TL203"]).findings]

    assert found(script.replace("\n", ending)) == found(script) == []


def test_definitions_are_found_after_a_lone_carriage_return():
    from torchlint.semantic import model

    text = "import torch\rdef helper(x):\r    return x\rclass Net:\r    pass\r"
    assert model.defined_names(text) == ["helper", "Net"]


def test_an_import_line_is_found_after_a_lone_carriage_return():
    from torchlint.static.context import _in_import_line

    text = "x = 1\r    import torch\r"
    assert _in_import_line(text, text.index("torch"))
    assert not _in_import_line("import os\rx = torch\r", len("import os\rx = "))


def test_stdin_counts_python_lines(run):
    text = source(ODD["nel-string"])
    checked = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "concise", "--stdin-filename", "m.py"],
                                 input=text.encode(), catch_exceptions=False)
    assert sorted(line.split(":")[1] for line in checked.output.splitlines() if line.startswith("m.py:")) == sorted(
        [str(line_of(text, "a = ")), str(line_of(text, "c = "))])
    assert "TL003" not in checked.output
