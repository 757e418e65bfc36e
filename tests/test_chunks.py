"""The language server's chunked parse must give the tree `libcst.parse_module` gives, and
positions from it (known statement lines, spans remembered across edits) libcst's own."""

from __future__ import annotations

import json
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from torchlint.static import chunks
from torchlint.static.chunks import ChunkParser, cut_points

ROOT = Path(__file__).resolve().parents[1]

SOURCES = {
    "plain": "import torch\nimport torch.nn as nn\n\n\ndef f(x):\n    return x\n\n\nclass A:\n    pass\n",
    "header comments": "#!/usr/bin/env python\n# a header\n\n# attached\nimport torch\n\n# about f\n\ndef f():\n    pass\n# trailing\n\n",
    "docstring at column 0": '"""Module doc.\n\nimport not_a_statement\n@not_a_decorator\n"""\nx = 1\ns = """\ny = 2\n"""\nz = 3\n',
    "decorators and blank lines": "@dec\n\n@dec2(\n    1)\n# between\ndef f():\n    pass\n\n@dec\nclass C:\n    x = 1\n",
    "clauses": "if a:\n    x = 1\nelif b:\n    x = 2\nelse:\n    x = 3\ntry:\n    pass\nexcept E:\n    pass\nfinally:\n    pass\nfor i in r:\n    pass\nelse:\n    pass\n",
    "indented comments after a block": "def f():\n    x = 1\n    # belongs to f?\n\n# column 0\ny = 2\n\ndef g():\n    pass\n        # deeper\n  # shallower\nz = 3\n",
    "brackets at column 0": "x = [\nfoo,\nbar,\n]\ny = {\n'a': 1,\n}\nz = f(\na)\n",
    "backslash": "x = 1 + \\\n2\ny = 3\nassert x, \\\nmsg\n",
    "tabs": "if x:\n\ty = 1\n\tif z:\n\t\tw = 2\nq = 1\nif a:\n\tb = 2\n",
    "mixed indentation": "if x:\n    y = 1\nif z:\n  w = 2\nif a:\n\tb = 3\n",
    "indented first in later chunk": "x = 1\ny = 2\nif z:\n   w = 3\nif a:\n   b = 4\n",
    "crlf": "import torch\r\n\r\ndef f(x):\r\n    return x\r\n\r\ny = f(1)\r\n",
    "mixed newlines": "import torch\n\ndef f(x):\r\n    return x\r\n\ny = 1\r\nz = 2\n",
    "lone cr": "x = 1\ry = 2\r\rdef f():\r    pass\r",
    "no trailing newline": "import torch\n\nx = torch.load(p)",
    "form feed": "x = 1\n\f\ndef f():\n    pass\n\fy = 2\n",
    "strings with quotes and comments": "a = 'it''s'  # a ' quote\nb = \"\"\"x\n'''\n\"\"\"\nc = r'\\''\n# \"\"\" in a comment\nd = 1\n",
    "fstring nested quotes": 'x = f"{d["k"]}"\ny = f"""\n{x}\n"""\nz = 1\n',
    "match": "match x:\n    case 1:\n        pass\n    case _:\n        pass\ny = 2\n",
    "async and soft keywords": "async def f():\n    await g()\ntype X = int\nmatch = 1\n",
    "semicolons and suites": "x = 1; y = 2\nif x: pass\nwhile y: y -= 1\nclass C: pass\n",
    "only comments": "# a\n# b\n",
    "empty": "",
    "one statement": "x = 1\n",
}


def _same(a: cst.Module, b: cst.Module) -> bool:
    def lines_equal(x, y) -> bool:
        return len(x) == len(y) and all(p.deep_equals(q) for p, q in zip(x, y))

    return (
        a.deep_equals(b)
        and lines_equal(a.header, b.header)
        and lines_equal(a.footer, b.footer)
        and (a.default_indent, a.default_newline, a.has_trailing_newline, a.encoding)
        == (b.default_indent, b.default_newline, b.has_trailing_newline, b.encoding)
    )


def _parses(source: str) -> bool:
    try:
        cst.parse_module(source)
    except Exception:
        return False
    return True


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_the_chunked_parse_equals_the_whole_file_parse(name):
    source = SOURCES[name]
    if not _parses(source):
        pytest.skip("this libcst does not parse it")
    parsed = ChunkParser().parse(source)
    whole = cst.parse_module(source)
    assert parsed.module.code == whole.code  # the source, except where libcst drops a form feed
    assert _same(parsed.module, whole)


def test_real_files_parse_the_same_in_chunks():
    # Every eighth file of torchlint's own source (all of them take ~20 s of deep comparisons).
    files = (sorted((ROOT / "torchlint").rglob("*.py")) + sorted((ROOT / "plugins").rglob("*.py")))[::8]
    several = 0
    for path in files:
        source = path.read_text(encoding="utf-8")
        parsed = ChunkParser().parse(source)
        assert _same(parsed.module, cst.parse_module(source)), path
        several += len(cut_points(source)) > 5
    assert several > 10  # the files really were cut


def test_an_edit_parses_only_its_chunk_and_reuses_the_other_statements(monkeypatch):
    source = "import torch\n\n\ndef f(x):\n    return x\n\n\ndef g(x):\n    return x + 1\n\n\ny = f(1)\n"
    parser = ChunkParser()
    before = parser.parse(source).module
    parsed: list[str] = []
    real = cst.parse_module

    def counting(text, *args):
        parsed.append(text)
        return real(text, *args)

    monkeypatch.setattr(chunks.cst, "parse_module", counting)
    edited = source.replace("x + 1", "x + 2")
    after = parser.parse(edited).module
    assert parsed == ["\n\ndef g(x):\n    return x + 2\n"]
    assert after.body[0] is before.body[0] and after.body[1] is before.body[1] and after.body[3] is before.body[3]
    assert after.body[2] is not before.body[2]
    assert _same(after, real(edited))


def test_a_syntax_error_raises_as_the_whole_file_parse_does():
    source = "import torch\n\ndef f(x):\n    return x +\n\ny = 1\n"
    with pytest.raises(cst.ParserSyntaxError) as whole:
        cst.parse_module(source)
    with pytest.raises(cst.ParserSyntaxError) as chunked:
        ChunkParser().parse(source)
    assert (chunked.value.raw_line, chunked.value.raw_column) == (whole.value.raw_line, whole.value.raw_column)


def test_a_chunk_that_does_not_parse_alone_is_merged_with_the_next():
    source = "x = [\nfoo,\n]\ny = 1\n"
    assert len(cut_points(source)) == 3  # the scan does not see brackets
    parsed = ChunkParser().parse(source)
    assert _same(parsed.module, cst.parse_module(source))


def _expected_spans(module: cst.Module) -> dict[int, tuple[int, int, int, int]]:
    found = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {id(node): (r.start.line, r.start.column + 1, r.end.line, r.end.column + 1) for node, r in found.items()}


def _calls(module: cst.Module):
    stack = list(module.body)
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call):
            yield node
        stack.extend(node.children)


@pytest.mark.parametrize("hinted", [True, False])
def test_positions_from_the_chunked_parse_are_libcsts_across_edits(hinted):
    source = (ROOT / "examples" / "buggy_project" / "train.py").read_text()
    parser = ChunkParser()
    versions = [source, "# a new first line\n\n" + source, source.replace("\n\n", "\n\n\n", 3), source]
    for version in versions:
        parsed = parser.parse(version)
        positions = parsed.positions()
        expected = _expected_spans(parsed.module)
        owner = {id(node): statement for statement in parsed.module.body for node in _walk(statement)}
        calls = list(_calls(parsed.module))
        assert len(calls) > 10
        for call in calls:
            hint = owner[id(call)] if hinted else None
            assert positions.span(call, hint) == expected[id(call)]
        assert positions._whole is None
    # the statements were reused and their spans remembered: the last version generated no code
    assert parsed.remembered.spans and all(parsed.remembered.spans.values())


def _walk(node):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


def test_findings_and_facts_are_the_same_with_the_chunked_parse():
    from torchlint.session import open_session
    from torchlint.static.engine import StaticEngine

    session = open_session(None, ROOT, ROOT, isolated=True)
    engine = StaticEngine(session.config, session.pm, session.rules, set(session.rules))
    files = sorted((ROOT / "examples").rglob("*.py"))
    findings = 0
    for path in files:
        source = path.read_text(encoding="utf-8")
        want = json.dumps(engine.check_text("m.py", source).to_json(), sort_keys=True)
        parser = ChunkParser()
        lines = source.splitlines(keepends=True)
        engine.check_text("m.py", "".join(lines[:1] + lines[2:]), parser=parser)  # an edit, then back
        got = json.dumps(engine.check_text("m.py", source, parser=parser).to_json(), sort_keys=True)
        assert got == want, path
        findings += len(json.loads(want)["findings"])
    assert findings > 10
