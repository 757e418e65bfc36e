"""Evidence to statuses, runtime-only findings and outcomes: plain data, no torch needed."""

from __future__ import annotations

from pathlib import Path

from conftest import every_rule
from torchlint.findings import Finding, Location
from torchlint.runtime.merge.matching import merge
from torchlint.runtime.merge.child_result import ChildResult

START = {"event": "start", "probes": [{"name": "device", "confirms": ["TL201"], "runtime_code": "TL701"},
                                      {"name": "loss", "confirms": ["TL101"], "runtime_code": "TL704"}]}
ENABLED = {"TL101", "TL201", "TL301"}


RULES = every_rule()


def static(code: str, path: Path, line: int, end_line: int | None = None) -> Finding:
    return Finding(code, code.lower(), "static message", str(path), Location(line, 5, end_line or line, 9))


def child(*events: dict, **kwargs) -> ChildResult:
    defaults = dict(returncode=0, timed_out=False, seconds=1.0, script="/p/train.py")
    defaults.update(kwargs)
    return ChildResult(events=[START, *events], **defaults)


def completed(**counts) -> dict:
    return {"event": "outcome", "status": "completed", "optimizer_steps": 1, "forward_calls": 1, **counts}


def statuses(findings):
    return {(f.code, f.location.line): f.evidence[0].status for f in findings}


def test_confirmed_not_reproduced_not_reached_and_not_probed(tmp_path):
    models = tmp_path / "models.py"
    evidence = {"event": "evidence", "probe": "device", "code": "TL201", "runtime_code": "TL701",
                "message": "add mixed cpu and cuda:0", "at": [str(models), 12], "sites": [[str(models), 11]], "data": {}}
    observed = {"event": "observed", "code": "TL101", "path": str(models), "line": 30, "note": "its input was logits"}
    findings, outcome = merge(
        [static("TL201", models, 11), static("TL101", models, 29, 31), static("TL101", models, 40), static("TL301", models, 50)],
        child(evidence, observed, completed()), enabled=ENABLED, cwd=tmp_path, timeout=10, rules=RULES)
    assert statuses(findings) == {("TL201", 11): "confirmed", ("TL101", 29): "not reproduced",
                                  ("TL101", 40): "not reached", ("TL301", 50): "not probed"}
    assert findings[0].evidence[0].detail == "add mixed cpu and cuda:0"
    assert outcome.succeeded


def test_unexplained_evidence_becomes_a_runtime_only_finding(tmp_path):
    evidence = {"event": "evidence", "probe": "device", "code": None, "runtime_code": "TL701",
                "message": "conv2d mixed cpu and cuda:0", "at": [str(tmp_path / "train.py"), 7], "sites": [], "data": {}}
    findings, _ = merge([], child(evidence, completed()), enabled=ENABLED, cwd=tmp_path, timeout=10, rules=RULES)
    (finding,) = findings
    assert (finding.code, finding.path, finding.location.line) == ("TL701", "train.py", 7)
    assert finding.evidence[0].status == "runtime only"


def test_evidence_for_a_disabled_rule_is_dropped(tmp_path):
    evidence = {"event": "evidence", "probe": "loss", "code": "TL101", "runtime_code": "TL704",
                "message": "m", "at": [str(tmp_path / "t.py"), 3], "sites": [[str(tmp_path / "t.py"), 3]], "data": {}}
    findings, _ = merge([], child(evidence, completed()), enabled={"TL201"}, cwd=tmp_path, timeout=10, rules=RULES)
    assert findings == []


def test_a_crash_explained_by_evidence_is_not_reported_twice(tmp_path):
    raised = {"event": "outcome", "status": "raised", "optimizer_steps": 0, "forward_calls": 1,
              "exception": {"type": "RuntimeError", "message": "m", "at": None, "explained_by": "TL201"}}
    findings, outcome = merge([], child(raised), enabled=ENABLED, cwd=tmp_path, timeout=10, rules=RULES)
    assert findings == [] and outcome.status == "raised"
    raised["exception"]["explained_by"] = None
    findings, _ = merge([], child(raised), enabled=ENABLED, cwd=tmp_path, timeout=10, rules=RULES)
    assert [f.code for f in findings] == ["TL702"]


def test_signal_death_and_timeout_without_an_outcome(tmp_path):
    progress = {"event": "progress", "optimizer_steps": 4, "forward_calls": 4}
    findings, outcome = merge([], child(progress, returncode=-6, signal_name="SIGABRT", output_tail="Fatal Python error: Aborted"),
                              enabled=ENABLED, cwd=tmp_path, timeout=10, rules=RULES)
    assert outcome.status == "killed" and "after 4 optimizer steps" in outcome.summary
    assert findings[0].code == "TL702" and "Fatal Python error" in findings[0].evidence[0].data["output_tail"]
    findings, outcome = merge([], child(returncode=-9, timed_out=True), enabled=ENABLED, cwd=tmp_path, timeout=10, rules=RULES)
    assert outcome.status == "timed-out" and [f.code for f in findings] == ["TL703"]


def test_a_torn_last_event_line_is_skipped(tmp_path):
    from torchlint.runtime.events import EventWriter, read_events

    path = tmp_path / "events.jsonl"
    writer = EventWriter(path)
    writer.emit("progress", optimizer_steps=1)
    writer.close()
    with open(path, "a") as stream:
        stream.write('{"event": "evid')
    assert [e["event"] for e in read_events(path)] == ["progress"]


def test_status_zero_without_an_outcome_event_is_never_a_completed_run(tmp_path):
    progress = {"event": "progress", "optimizer_steps": 2, "forward_calls": 2}
    findings, outcome = merge([], child(progress, returncode=0), enabled=ENABLED, cwd=tmp_path, timeout=10, rules=RULES)
    assert not outcome.succeeded and outcome.status == "no-outcome"
    assert [f.code for f in findings] == ["TL702"]
    assert "without finishing under torchlint" in findings[0].message and "2 optimizer steps" in findings[0].message
    # no events at all: the evidence channel was lost, which is not a success either
    findings, outcome = merge([], ChildResult(events=[], returncode=0, timed_out=False, seconds=1.0, script="/p/train.py"),
                              enabled=ENABLED, cwd=tmp_path, timeout=10, rules=RULES)
    assert not outcome.succeeded and [f.code for f in findings] == ["TL702"]
    assert "no evidence" in findings[0].message


def test_a_program_kept_alive_by_a_thread_names_the_thread_and_its_line(tmp_path):
    script = str(tmp_path / "train.py")
    stopped = {"event": "timed-out", "phase": "exiting", "at": [script, 7], "stack": [],
               "threads": [{"name": "uploader", "at": [script, 7]}], "optimizer_steps": 3, "forward_calls": 3}
    findings, outcome = merge([], child(completed(), stopped, timed_out=True, script=script), enabled=ENABLED, cwd=tmp_path,
                              timeout=10, rules=RULES)
    (finding,) = findings
    assert (finding.code, finding.location.line) == ("TL703", 7)
    assert finding.message == "the program finished but did not exit before the timeout (thread 'uploader' at train.py:7 kept it alive)"


def test_a_timeout_without_the_watchdogs_event_is_placed_from_faulthandlers_dump(tmp_path):
    # the target held the interpreter lock: only faulthandler's dump says where it was
    script = str(tmp_path / "train.py")
    import sysconfig

    stdlib = sysconfig.get_paths()["stdlib"]
    child_py = "/site/torchlint/runtime/child/main.py"
    dump = (f'Timeout (0:00:05.00)!\nThread 0x00007f01 (most recent call first):\n'
            f'  File "{stdlib}/threading.py", line 320 in wait\n\n'
            f'Thread 0x00007f02 (most recent call first):\n  File "{stdlib}/re/__init__.py", line 166 in match\n'
            f'  File "{script}", line 5 in parse\n  File "{script}", line 8 in <module>\n'
            f'  File "{child_py}", line 80 in main\n')
    findings, outcome = merge([], child(returncode=1, timed_out=True, output_tail=dump, script=script), enabled=ENABLED,
                              cwd=tmp_path, timeout=5, rules=RULES)
    assert outcome.status == "timed-out" and outcome.data["source"] == "faulthandler"
    (finding,) = findings
    assert (finding.code, finding.location.line) == ("TL703", 5)
    assert "timed out after 5 s at train.py:5 " in finding.message


def test_a_runtime_only_event_repeating_a_confirmation_is_not_reported_again(tmp_path):
    """The dataloader probe's TL741 and its TL405 confirmation are one measurement, sent twice
    (TL405 is off by default); a TL405 finding confirmed by it leaves no TL741 beside it."""
    train = tmp_path / "train.py"
    start = {"event": "start", "probes": [{"name": "dataloader", "confirms": ["TL405"], "runtime_code": "TL741"}]}
    wait = dict(event="evidence", probe="dataloader", message="waited 60% of each step", at=[str(train), 9], data={})
    runtime_only = dict(wait, code=None, runtime_code="TL741", sites=[])
    confirmation = dict(wait, code="TL405", runtime_code=None, sites=[[str(train), 9]])
    events = [start, runtime_only, confirmation, completed()]
    result = ChildResult(events=events, returncode=0, timed_out=False, seconds=1.0, script=str(train))
    findings, _ = merge([static("TL405", train, 9)], result, enabled={"TL405", "TL741"}, cwd=tmp_path, timeout=10, rules=RULES)
    assert [(f.code, f.evidence[0].status) for f in findings] == [("TL405", "confirmed")]
    # Without the static finding (TL405 not selected) the runtime-only finding stands.
    findings, _ = merge([], result, enabled={"TL741"}, cwd=tmp_path, timeout=10, rules=RULES)
    assert [(f.code, f.evidence[0].status) for f in findings] == [("TL741", "runtime only")]
    # Another probe's event at the same line is news of its own.
    other = dict(runtime_only, probe="syncs", runtime_code="TL734")
    result.events.insert(3, other)
    findings, _ = merge([static("TL405", train, 9)], result, enabled={"TL405", "TL734"}, cwd=tmp_path, timeout=10, rules=RULES)
    assert sorted(f.code for f in findings) == ["TL405", "TL734"]


def crashed_at(path: Path, line: int, message: str = "Attempting to deserialize object on a CUDA device",
               explained_by: str | None = None) -> dict:
    return {"event": "outcome", "status": "raised", "optimizer_steps": 0, "forward_calls": 0,
            "exception": {"type": "RuntimeError", "message": message, "at": [str(path), line], "traceback": "",
                          "explained_by": explained_by}}


def test_a_finding_on_the_line_that_raised_ran_and_was_not_probed(tmp_path):
    train = tmp_path / "train.py"
    findings, _ = merge([static("TL101", train, 7), static("TL101", train, 9)], child(crashed_at(train, 7)),
                        enabled=ENABLED, cwd=tmp_path, timeout=10, rules=RULES)
    assert statuses(findings) == {("TL101", 7): "not probed", ("TL101", 9): "not reached", ("TL702", 7): "runtime only"}
    assert findings[0].evidence[0].detail == "this line ran and raised RuntimeError before this could be checked"


def test_a_dropped_static_finding_that_the_run_proves_comes_back_confirmed(tmp_path):
    train = tmp_path / "train.py"
    start = {"event": "start", "probes": [{"name": "checkpoint", "confirms": ["TL301", "TL302"], "runtime_code": "TL706"}]}
    evidence = {"event": "evidence", "probe": "checkpoint", "code": "TL301", "runtime_code": "TL706",
                "message": "ckpt.pt holds 4 storages on cuda:0", "at": [str(train), 5], "sites": [[str(train), 5]], "data": {}}
    both = Finding("TL301", "load-without-map-location", "`torch.load` without `map_location` or `weights_only`: ...",
                   str(train), Location(5, 9, 5, 30))
    weights_only = Finding("TL302", "load-without-weights-only", "`torch.load` without `weights_only`: ...",
                           str(train), Location(5, 9, 5, 30))
    result = ChildResult(events=[start, evidence, crashed_at(train, 5, explained_by="TL301")], returncode=1, timed_out=False, seconds=1.0,
                         script=str(train))
    findings, _ = merge([weights_only], result, enabled=ENABLED | {"TL302"}, cwd=tmp_path, timeout=10, rules=RULES,
                        refuted=[both])
    # TL301's finding names weights_only too: it replaces TL302's beside it, and no TL706 repeats it.
    assert [(f.code, f.evidence[0].status) for f in findings] == [("TL301", "confirmed")]


def test_a_dropped_finding_stays_dropped_without_evidence_of_its_own(tmp_path):
    train = tmp_path / "train.py"
    dropped = static("TL201", train, 11)
    findings, _ = merge([], child(completed()), enabled=ENABLED, cwd=tmp_path, timeout=10, rules=RULES, refuted=[dropped])
    assert findings == []
