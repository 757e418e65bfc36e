from __future__ import annotations

import pytest

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
    source = f"import torch  # on cuda\nx = torch.load(p, weights_only=True)  {comment}\n"
    assert lines_flagged(source) == ([] if suppressed else [2])


def test_comment_on_the_closing_line_of_a_multiline_call():
    source = "import torch  # on cuda\nx = torch.load(\n    p,\n)  # noqa: TL301\ny = torch.load(q)\n"
    assert lines_flagged(source) == [5]


def test_comment_on_a_middle_line_does_not_suppress():
    source = "import torch  # on cuda\nx = torch.load(\n    p,  # noqa: TL301\n    weights_only=True,\n)\n"
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
    source = f"{header}\nimport torch  # on cuda\nx = torch.load(p, weights_only=True)\ny = torch.load(q, weights_only=True)\n"
    assert lines_flagged(source) == flagged


def test_noqa_inside_a_string_on_another_line_does_not_leak():
    source = 'import torch  # on cuda\nmsg = "# noqa"\nx = torch.load(p, weights_only=True)\n'
    assert lines_flagged(source) == [3]


def test_suppressed_findings_are_counted():
    result = check_sources({"a.py": "import torch  # on cuda\nx = torch.load(p, weights_only=True)  # noqa\n"}, select=["TL301"])
    assert result.findings == [] and result.suppressed == 1


def test_suppressions_are_read_from_the_checked_content_not_a_second_read(tmp_path, monkeypatch):
    from pathlib import Path

    from torchlint.config import Config
    from torchlint.pluginmanager import collect_rules, make_plugin_manager
    from torchlint.static.engine import StaticEngine

    (tmp_path / "a.py").write_text("import torch  # on cuda\nx = torch.load(p, weights_only=True)  # noqa: TL301\n")
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
