"""`torchlint check --add-noqa`: each line with a finding gets `# noqa: TLxxx`, merged into a
noqa comment already there, never inside a string; a second run changes nothing."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from torchlint.cli import main

CUDA = "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n"


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def invoke(*args):
        return CliRunner().invoke(main, ["check", "--no-cache", *args], catch_exceptions=False)

    return invoke


def add_noqa(run, tmp_path, text: str, *flags, name="m.py") -> tuple[str, object]:
    (tmp_path / name).write_bytes(text.encode())
    result = run("--add-noqa", *flags, name)
    return (tmp_path / name).read_bytes().decode(), result


def test_adds_a_directive_per_line_and_a_second_run_changes_nothing(run, tmp_path):
    text = CUDA + "a = torch.load(p, weights_only=True)\nb = torch.ger(x, x)   \nc = 1\n"
    after, result = add_noqa(run, tmp_path, text)
    assert after == (
        CUDA + "a = torch.load(p, weights_only=True)  # noqa: TL301\nb = torch.ger(x, x)  # noqa: TL502\nc = 1\n"
    )
    assert result.exit_code == 0 and "Added 2 noqa directives in 1 file." in result.output
    again, result = add_noqa(run, tmp_path, after)
    assert again == after and "Added 0 noqa directives in 0 files." in result.output
    # silenced, and no suppression reported as unused
    assert run("m.py").exit_code == 0


def test_several_codes_on_one_line_are_sorted_and_unique(run, tmp_path, torch_2_5_installed):
    after, _ = add_noqa(run, tmp_path, "import torch\ny = torch.ger(torch.load(p), z) + torch.ger(z, z)\n")
    assert after.splitlines()[1].endswith("  # noqa: TL302, TL502")


def test_codes_merge_into_an_existing_noqa_keeping_other_tools_codes(run, tmp_path):
    text = (
        CUDA
        + "a = torch.load(p, weights_only=True)  # noqa: E501\n"
        + "b = torch.load(p, weights_only=True)  # noqa:E501,W291 -- long line\n"
        + "c = torch.load(p, weights_only=True)  # load on the CPU\n"
        + "d = torch.load(p, weights_only=True)  # type: ignore  # NOQA: E501 F401\n"
    )
    after, result = add_noqa(run, tmp_path, text)
    assert after.splitlines()[1:] == [
        "a = torch.load(p, weights_only=True)  # noqa: E501, TL301",
        "b = torch.load(p, weights_only=True)  # noqa:E501, TL301, W291 -- long line",
        "c = torch.load(p, weights_only=True)  # load on the CPU  # noqa: TL301",
        "d = torch.load(p, weights_only=True)  # type: ignore  # NOQA: E501, F401, TL301",
    ]
    assert result.exit_code == 0 and run("m.py").exit_code == 0


def test_a_finding_spanning_lines_takes_the_comment_on_its_last_line_when_the_first_ends_in_a_string(run, tmp_path, torch_2_5_installed):
    text = 'import torch\ny = torch.load("""a\nb""")\n'
    after, result = add_noqa(run, tmp_path, text)
    assert after == 'import torch\ny = torch.load("""a\nb""")  # noqa: TL302\n'
    assert result.exit_code == 0 and run("m.py").exit_code == 0


@pytest.mark.parametrize(
    "text",
    [
        'import torch\ny = torch.ger(a, a) + len("""\ntext\n""")\n',  # the line ends inside a string
        "import torch\ny = torch.ger(a, a) + \\\n    2\n",  # a backslash continuation
        'import torch\ny = torch.ger(a, a) + len(f"""\n{x}\n""")\n',  # inside an f-string
    ],
)
def test_no_comment_where_a_line_cannot_take_one(run, tmp_path, text):
    after, result = add_noqa(run, tmp_path, text)
    assert after == text
    assert result.exit_code == 1  # the finding is still there: say so
    assert "m.py:2: TL502 not silenced" in result.output and "Added 0 noqa directives" in result.output


def test_a_string_holding_noqa_is_not_a_comment(run, tmp_path):
    text = 'import torch\ny = torch.ger(a, a) + len("# noqa: E501")\n'
    after, _ = add_noqa(run, tmp_path, text)
    assert after == 'import torch\ny = torch.ger(a, a) + len("# noqa: E501")  # noqa: TL502\n'


def test_line_endings_and_encoding_are_kept(run, tmp_path):
    text = "# -*- coding: latin-1 -*-\r\nimport torch\r\nname = 'caf\xe9'\r\ny = torch.ger(x, x)\r\n"
    (tmp_path / "m.py").write_bytes(text.encode("latin-1"))
    assert run("--add-noqa", "m.py").exit_code == 0
    assert (tmp_path / "m.py").read_bytes() == text.replace("x)\r\n", "x)  # noqa: TL502\r\n").encode("latin-1")


def test_a_file_that_does_not_parse_is_left_alone(run, tmp_path):
    after, result = add_noqa(run, tmp_path, "def f(:\n")
    assert after == "def f(:\n" and result.exit_code == 0


def test_add_noqa_does_not_combine_with_fixing(run, tmp_path):
    (tmp_path / "m.py").write_text("x = 1\n")
    for flag in ("--fix", "--fix-only", "--diff"):
        result = run("--add-noqa", flag, "m.py")
        assert result.exit_code == 2 and "--add-noqa" in result.output


def test_fix_true_in_the_configuration_does_not_fix_under_add_noqa(run, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\nfix = true\n")
    after, result = add_noqa(run, tmp_path, "import torch\ny = torch.ger(x, x)\n")
    assert after == "import torch\ny = torch.ger(x, x)  # noqa: TL502\n" and result.exit_code == 0
