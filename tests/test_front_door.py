"""The bundled examples tell the truth: every line of `examples/buggy_project` whose comment
describes a bug gets a finding, on that line or at the use the comment names, and
`examples/fixed_project`, its fixed twin, is clean."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from torchlint.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

#: (file, line) of each commented bug in buggy_project -> the code reported for it. The
#: softmax returned by models.py:19 is reported where train.py feeds it to the loss.
EXPECTED = {
    ("models.py", 16): "TL201",
    ("models.py", 18): "TL103",
    ("train.py", 18): "TL101",
    ("train.py", 30): "TL102",
    ("train.py", 35): "TL301",
}


def findings(folder: Path, monkeypatch) -> list[dict]:
    monkeypatch.chdir(folder)
    # The folder is the project (its two files give each other their cross-file facts); the
    # default would also read this whole repository, 20 CPU-s a check. README's console blocks
    # run the same folders with the default.
    result = CliRunner().invoke(main, ["check", "--no-cache", "--no-project-context", "--exit-zero", "--output-format", "json", "."], catch_exceptions=False)
    return json.loads(result.output)


def test_every_commented_bug_of_the_buggy_project_is_reported(monkeypatch):
    found = {(Path(f["filename"]).name, f["location"]["row"]): f["code"] for f in findings(EXAMPLES / "buggy_project", monkeypatch)}
    assert found == EXPECTED
    commented = {
        (path.name, number)
        for path in (EXAMPLES / "buggy_project").glob("*.py")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "  # " in line and not line.lstrip().startswith("#")
    }
    # every comment on a line of code claims a bug; the one on models.py:19 is found in train.py
    assert commented - {("models.py", 19)} == set(EXPECTED)


def test_the_fixed_project_is_clean(monkeypatch):
    assert findings(EXAMPLES / "fixed_project", monkeypatch) == []
