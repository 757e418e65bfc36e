from __future__ import annotations

import pytest

from torchlint.static.suppress import parse_suppressions
from torchlint.testing import check_sources


def lines_flagged(source: str) -> list[int]:
    result = check_sources({"a.py": source}, select=["TL301"])
    return [f.location.line for f in result.findings]


@pytest.mark.parametrize(
    "comment,suppressed",
    [
        ("# noqa", True),
        ("# noqa: TL301", True),
        ("#noqa:TL301", True),
        ("# NOQA: TL301", True),
        ("# noqa: TL101, TL301", True),
        ("# noqa: TL101", False),
        ("# torchlint: disable=TL301", True),
        ("# torchlint: disable=load-without-map-location", True),
        ("# torchlint: disable=TL101,TL301", True),
        ("# torchlint: disable=TL201", False),
        ("# an ordinary comment", False),
    ],
)
def test_line_comments(comment, suppressed):
    source = f"import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = torch.load(p, weights_only=True)  {comment}\n"
    assert lines_flagged(source) == ([] if suppressed else [2])


def test_comment_on_the_closing_line_of_a_multiline_call():
    source = "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = torch.load(\n    p,\n)  # noqa: TL301\ny = torch.load(q)\n"
    assert lines_flagged(source) == [5]


def test_comment_on_a_middle_line_does_not_suppress():
    source = "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = torch.load(\n    p,  # noqa: TL301\n    weights_only=True,\n)\n"
    assert lines_flagged(source) == [2]


@pytest.mark.parametrize(
    "header,flagged",
    [
        ("# torchlint: disable-file=TL301", []),
        ("# torchlint: disable-file=TL3", []),
        ("# torchlint: disable-file", []),
        ("# torchlint: disable-file=TL101", [3, 4]),
        ("x = 1  # torchlint: disable-file=TL301", [3, 4]),  # must stand on its own line
    ],
)
def test_file_level_disable(header, flagged):
    source = f"{header}\nimport torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = torch.load(p, weights_only=True)\ny = torch.load(q, weights_only=True)\n"
    assert lines_flagged(source) == flagged


def test_noqa_inside_a_string_on_another_line_does_not_leak():
    source = 'import torch; DEVICE = "cuda" if torch.cuda.is_available() else "cpu"\nmsg = "# noqa"\nx = torch.load(p, weights_only=True)\n'
    assert lines_flagged(source) == [3]


def test_suppressed_findings_are_counted():
    result = check_sources({"a.py": "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = torch.load(p, weights_only=True)  # noqa\n"}, select=["TL301"])
    assert result.findings == [] and result.suppressed == 1


def test_suppressions_are_read_from_the_checked_content_not_a_second_read(tmp_path, monkeypatch):
    from pathlib import Path

    from torchlint.config import Config
    from torchlint.pluginmanager import collect_rules, make_plugin_manager
    from torchlint.static.engine import StaticEngine

    (tmp_path / "a.py").write_text("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = torch.load(p, weights_only=True)  # noqa: TL301\n")
    from torchlint.static import source

    reads = []
    real = source.os.open

    def counting(path, *args, **kwargs):  # every read of a checked file opens it here
        if Path(path).name == "a.py":
            reads.append(Path(path).name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(source.os, "open", counting)
    pm = make_plugin_manager()
    engine = StaticEngine(Config(root=tmp_path), pm, collect_rules(pm), {"TL301"})
    result = engine.check_paths([tmp_path / "a.py"], cwd=tmp_path)
    assert result.findings == [] and result.suppressed == 1
    assert reads == ["a.py"]


UNUSED = """\
import torch; DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
a = torch.load("x.pt", map_location="cpu", weights_only=True)  # noqa: TL301
b = torch.load("y.pt", weights_only=True)  # noqa: TL301
c = 1  # noqa: TL999
d = 2  # noqa: E501, F401
e = 3  # noqa
f = 4  # noqa: TL101
g = torch.load("z.pt", weights_only=True)  # torchlint: disable=load-without-map-location
"""


def test_suppressions_that_silence_nothing_are_reported():
    result = check_sources({"a.py": UNUSED}, select=["TL301", "TL003"])
    found = sorted((f.code, f.location.line, f.location.column, f.message) for f in result.findings)
    assert found == [
        ("TL003", 2, 64, "suppression of `TL301` silences nothing here; remove it"),
        ("TL003", 4, 8, "`TL999` in a suppression comment names no torchlint rule; it silences nothing"),
    ]
    # line 3 and 8 silence a TL301 finding; another linter's codes and a bare noqa are not
    # judged; TL101 did not run in this check, so its noqa is not judged either
    assert result.suppressed == 2


def test_unused_suppressions_are_not_reported_when_the_rule_is_not_selected():
    result = check_sources({"a.py": UNUSED}, select=["TL301"])
    assert [f.code for f in result.findings] == []


@pytest.mark.parametrize(
    "directive,silenced",
    [("# torchlint: noqa", {"TL301", "TL101"}), ("# torchlint: noqa: TL301", {"TL301"}), ("# TORCHLINT: NOQA: TL3", {"TL301"})],
)
def test_ruffs_file_level_noqa_spelling_silences_the_file(directive, silenced):
    found = parse_suppressions(f"import torch\n{directive}\nx = 1\n")
    assert {code for code in ("TL301", "TL101") if found.silences(code, "", (3,))} == silenced
    assert found.by_line == {}


def test_torchlint_noqa_after_code_is_a_line_noqa():
    found = parse_suppressions("x = torch.load(p)  # torchlint: noqa: TL301\ny = 2\n")
    assert found.whole_file == set()
    assert found.silences("TL301", "", (1,)) and not found.silences("TL301", "", (2,))
