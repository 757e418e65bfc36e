"""The detection benchmark's corpus is well-formed and its scorer counts correctly.

Detection numbers are not asserted here: they are benchmark results (see
benchmarks/detection/README.md), not pass/fail criteria.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCORE_PY = ROOT / "benchmarks" / "detection" / "score.py"
PROGRAMS = ROOT / "benchmarks" / "detection" / "programs"


def _load_score():
    spec = importlib.util.spec_from_file_location("detection_score", SCORE_PY)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


score = _load_score()
PROGRAM_DIRS = sorted(p for p in PROGRAMS.iterdir() if p.is_dir())


def test_corpus_has_programs_for_every_core_rule():
    labels = [label for program in PROGRAM_DIRS for label in score.program_labels(program)]
    for code in score.SCORED_RULES:
        kinds = {label.kind for label in labels if label.code == code}
        assert kinds == {"expect", "safe"}, f"{code} needs both expect and safe labels, has {kinds}"


@pytest.mark.parametrize("program", PROGRAM_DIRS, ids=lambda p: p.name)
def test_program_is_well_formed(program):
    files = score.program_files(program)
    assert files, f"{program.name} has no .py file"
    for file in files:
        ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
    labels = score.program_labels(program)  # raises LabelError on a malformed label
    assert labels, f"{program.name} has no label"
    seen = {}
    for label in labels:
        where = f"{program.name}/{label.path}:{label.line}"
        assert label.code in score.SCORED_RULES, f"{where}: {label.code} is not a scored rule"
        source_line = (program / label.path).read_text(encoding="utf-8").splitlines()[label.line - 1]
        assert not source_line.lstrip().startswith("#"), f"{where}: a label must trail code, not stand alone"
        previous = seen.setdefault((label.path, label.line, label.code), label.kind)
        assert previous == label.kind, f"{where}: {label.code} is both expected and safe"


def test_parse_labels_reads_several_codes_and_clauses():
    source = textwrap.dedent(
        """\
        x = f(y)  # expect: TL101, TL102 -- both losses # safe: TL201 -- no device here
        s = "# expect: TL301 -- inside a string, not a comment"
        z = 1  # an ordinary remark
        w = g()  #   safe:TL103--no_grad caller
        """
    )
    labels = score.parse_labels(source, "a.py")
    assert [(l.line, l.code, l.kind, l.reason) for l in labels] == [
        (1, "TL101", "expect", "both losses"),
        (1, "TL102", "expect", "both losses"),
        (1, "TL201", "safe", "no device here"),
        (4, "TL103", "safe", "no_grad caller"),
    ]


@pytest.mark.parametrize(
    "comment",
    ["# expect: TL101", "# expect: TL1 -- short code", "# safe: TL101 --", "# Expect: tl101 -- lower case",
     "# safe: TL101 TL102 -- no comma"],
)
def test_malformed_labels_are_errors_that_name_the_line(comment):
    with pytest.raises(score.LabelError, match=r"m\.py:2"):
        score.parse_labels(f"a = 1\nb = 2  {comment}\n", "m.py")


def test_a_comment_that_does_not_start_like_a_label_is_a_remark():
    source = "a = 1  # we expect TL101 here -- see the note\nb = 2  # expect TL101 -- no colon\n"
    assert score.parse_labels(source, "m.py") == []


def _label(line, code, kind, path="t.py"):
    return score.Label(path, line, code, kind, "why")


def _finding(line, code, path="t.py"):
    return score.Finding(path, line, code, "msg")


def test_scoring_counts_each_outcome_once():
    labels = [
        _label(1, "TL101", "expect"),  # found twice: one TP
        _label(2, "TL101", "expect"),  # not found: FN
        _label(3, "TL101", "safe"),  # found: FP
        _label(4, "TL101", "safe"),  # not found: TN
        _label(5, "TL301", "expect"),  # found with another code only: FN
        _label(6, "TL301", "expect", path="other.py"),  # same line in another file: FN
    ]
    findings = [
        _finding(1, "TL101"), _finding(1, "TL101"),
        _finding(3, "TL101"),
        _finding(5, "TL201"),  # unlabelled: its code has no label on line 5
        _finding(6, "TL301"),  # unlabelled: t.py:6 has no label
        _finding(9, "TL103"),  # unlabelled
    ]
    outcome = score.score_program(labels, findings)
    assert [l.line for l in outcome.hits] == [1]
    assert [(l.path, l.line) for l in outcome.misses] == [("t.py", 2), ("t.py", 5), ("other.py", 6)]
    assert [(l.line, f.line) for l, f in outcome.false_positives] == [(3, 3)]
    assert [l.line for l in outcome.clean] == [4]
    assert sorted((f.line, f.code) for f in outcome.unlabelled) == [(5, "TL201"), (6, "TL301"), (9, "TL103")]

    scores = score.tally({"p": outcome})
    tl101, tl301 = scores["TL101"], scores["TL301"]
    assert (tl101.tp, tl101.fp, tl101.fn, tl101.tn) == (1, 1, 1, 1)
    assert tl101.precision == pytest.approx(0.5) and tl101.recall == pytest.approx(0.5)
    assert (tl301.tp, tl301.fn) == (0, 2) and tl301.precision is None and tl301.recall == 0.0
    assert scores["TL102"].precision is None and scores["TL102"].recall is None
    overall = score.total(scores)
    assert (overall.tp, overall.fp, overall.fn, overall.tn) == (1, 1, 3, 1)
    assert "| all | 4 | 2 | 1 | 1 | 3 | 1 | 0.50 | 0.25 |" in score.format_table(scores)


FAKE_TORCHLINT = """\
import json, sys
assert sys.argv[1] == "check" and sys.argv[-1] == "."
print(json.dumps([
    {"code": "TL101", "message": "m", "filename": "./train.py", "location": {"row": 2, "column": 1}},
    {"code": "TL301", "message": "m", "filename": "pkg/../train.py", "location": {"row": 3, "column": 1}},
]))
sys.exit(1)
"""


def test_main_scores_a_synthetic_corpus_end_to_end(tmp_path, capsys):
    """score.py drives the linter per program, normalises its paths and exits 0."""
    fake = tmp_path / "fake_torchlint.py"
    fake.write_text(FAKE_TORCHLINT)
    program = tmp_path / "programs" / "one"
    program.mkdir(parents=True)
    (program / "train.py").write_text(
        "import torch\n"
        "loss = f(x)  # expect: TL101 -- reported by the fake\n"
        "s = torch.load(p)  # safe: TL301 -- reported by the fake: a false positive\n"
        "t = torch.load(q)  # expect: TL301 -- not reported: a miss\n"
    )
    argv = ["--programs", str(tmp_path / "programs"), "--torchlint", f"{sys.executable} {fake}",
            "--timeout", "60", "--json"]
    assert score.main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["errors"] == {}
    assert report["rules"]["TL101"]["tp"] == 1
    assert (report["rules"]["TL301"]["fp"], report["rules"]["TL301"]["fn"]) == (1, 1)
    assert report["rules"]["all"]["precision"] == pytest.approx(0.5)
    assert report["programs"]["one"]["false_positives"][0]["finding"]["path"] == "train.py"


def test_a_broken_linter_is_reported_not_scored(tmp_path):
    program = tmp_path / "programs" / "one"
    program.mkdir(parents=True)
    (program / "a.py").write_text("x = 1  # expect: TL101 -- whatever\n")
    broken = [sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(2)"]
    outcomes, errors = score.score_corpus(tmp_path / "programs", broken, timeout=60)
    assert outcomes == {}
    assert "exit 2" in errors["one"] and "boom" in errors["one"]
    out = io.StringIO()
    score.report_text(outcomes, errors, out)
    assert "Programs not scored: 1" in out.getvalue()


def test_a_linter_that_prints_nothing_is_an_error_not_a_clean_program(tmp_path):
    """Exit 1 with no JSON is a crash (say, an import error), never "no findings"."""
    crashing = [sys.executable, "-c", "import sys; sys.stderr.write('ImportError: x'); sys.exit(1)"]
    findings, error = score.run_torchlint(tmp_path, crashing, timeout=60)
    assert findings == [] and "ImportError" in error


def test_the_default_command_keeps_the_checked_folder_off_sys_path(tmp_path):
    """A checked tree holding `random.py` (torch's own sources do) must not shadow the stdlib."""
    (tmp_path / "random.py").write_text("raise SystemExit('shadowed the standard library')\n")
    (tmp_path / "train.py").write_text("import torch\nstate = torch.load('x.pt')\n")
    findings, error = score.run_torchlint(tmp_path, score._torchlint_command(None), timeout=120)
    assert error is None, error
    assert all(f.path == "train.py" for f in findings)  # which findings is the benchmark's business


def test_only_names_a_missing_program_as_not_scored(tmp_path):
    (tmp_path / "programs" / "real").mkdir(parents=True)
    never_run = [sys.executable, "-c", "raise SystemExit(3)"]
    outcomes, errors = score.score_corpus(tmp_path / "programs", never_run, timeout=60, only=["typo"])
    assert outcomes == {} and list(errors) == ["typo"] and "no program folder" in errors["typo"]
