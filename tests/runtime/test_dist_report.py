"""One report from N ranks' events (no process started): ranks on evidence, the failing
rank's ending, each rank's line at a timeout, and the comparisons only several ranks allow."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from conftest import every_rule
from torchlint.runtime.distributed.report import merge_ranks
from torchlint.runtime.report.text import write_json, write_text
from torchlint.runtime.merge.child_result import ChildResult

SCRIPT = "/p/train.py"
RULES = every_rule()


def start(rank):
    return {"event": "start", "rank": rank, "t": 1.0, "probes": [{"name": "distributed", "confirms": ["TL807"], "runtime_code": "TL723"}]}


def result(events, timed_out=False):
    return ChildResult(events=events, returncode=1, timed_out=timed_out, seconds=3.0, script=SCRIPT)


def merged(events, world=2, timed_out=False):
    return merge_ranks([], result(events, timed_out), world=world, enabled={"TL807"}, cwd=Path("/p"), timeout=30.0, rules=RULES)


def test_evidence_seen_on_every_rank_is_one_finding_naming_the_ranks():
    evidence = {"event": "evidence", "probe": "device", "code": None, "runtime_code": "TL701", "message": "mixed",
                "at": [SCRIPT, 7], "sites": [], "data": {}}
    findings, outcome = merged([start(0), start(1), dict(evidence, rank=0), dict(evidence, rank=1),
                                {"event": "outcome", "status": "completed", "rank": 0}, {"event": "outcome", "status": "completed", "rank": 1}])
    assert [f.code for f in findings] == ["TL701"]
    assert findings[0].evidence[0].data["ranks"] == [0, 1] and findings[0].evidence[0].data["rank"] == 0
    out = io.StringIO()
    write_json(findings, outcome, {"path": SCRIPT}, out)
    document = json.loads(out.getvalue())
    assert document["findings"][0]["rank"] == 0 and document["outcome"]["world_size"] == 2
    text = io.StringIO()
    write_text(findings, outcome, "torchlint run train.py", text)
    assert "    ranks: 0, 1" in text.getvalue() and "on 2 ranks" in text.getvalue()


def test_the_rank_that_failed_first_is_the_runs_ending_and_the_others_are_named():
    events = [start(0), start(1),
              {"event": "outcome", "rank": 1, "t": 5.0, "status": "raised",
               "exception": {"type": "KeyError", "message": "1", "at": [SCRIPT, 12]}},
              {"event": "outcome", "rank": 0, "t": 5.5, "status": "raised",
               "exception": {"type": "RuntimeError", "message": "Connection closed by peer", "at": [SCRIPT, 13]}}]
    findings, outcome = merged(events)
    crash = next(f for f in findings if f.code == "TL702")
    assert crash.location.line == 12 and crash.message.startswith("rank 1 raised KeyError")
    assert "rank 0 then raised RuntimeError at train.py:13" in crash.evidence[0].data["more"]
    assert outcome.summary.startswith("rank 1 raised KeyError") and "rank 0 failed next" in outcome.summary


def test_a_timeout_shows_where_every_rank_was():
    stack = lambda line: [[SCRIPT, line, "main", f"line {line}"]]  # noqa: E731
    events = [start(0), start(1),
              {"event": "timed-out", "rank": 0, "t": 30.0, "phase": "target", "at": [SCRIPT, 20], "stack": stack(20)},
              {"event": "timed-out", "rank": 1, "t": 30.1, "phase": "target", "at": [SCRIPT, 25], "stack": stack(25)}]
    findings, outcome = merged(events, timed_out=True)
    timeout = next(f for f in findings if f.code == "TL703")
    assert timeout.location.line == 20 and timeout.message.startswith("rank 0 timed out")
    assert "rank 1 was at train.py:25 `line 25`" in timeout.evidence[0].data["more"]
    assert set(timeout.evidence[0].data["ranks"]) == {"0", "1"}


def digest(rank, weight, buffer=1.0):
    return {"event": "param-digest", "rank": rank, "model": "Net", "at": [SCRIPT, 30],
            "tensors": [["fc.weight", "parameter", weight, weight * 2], ["fc.bias", "parameter", 0.5, 0.5],
                        ["bn.running_mean", "buffer", buffer, buffer]]}


def test_parameters_that_differ_after_the_first_step_are_named_with_their_ranks():
    findings, _ = merged([start(0), start(1), digest(0, 1.0), digest(1, 2.0)])
    found = [f for f in findings if f.code == "TL721"]
    assert len(found) == 1 and "1 of 2 parameters" in found[0].message and "fc.weight (rank 0 vs rank 1)" in found[0].message
    assert "fc.bias" not in found[0].message and found[0].location.line == 30


def test_buffers_that_differ_mention_syncbatchnorm():
    findings, _ = merged([start(0), start(1), digest(0, 1.0, buffer=1.0), digest(1, 1.0, buffer=3.0)])
    found = [f for f in findings if f.code == "TL721"]
    assert len(found) == 1 and "buffers" in found[0].message and "SyncBatchNorm" in found[0].message
    assert found[0].severity.value == "warning"


def test_equal_digests_are_clean():
    findings, _ = merged([start(0), start(1), digest(0, 1.0), digest(1, 1.0)])
    assert not [f for f in findings if f.code == "TL721"]


def sampler(rank, indices, replicas=1):
    return {"event": "sampler-indices", "rank": rank, "at": [SCRIPT, 9], "indices": indices, "count": len(indices),
            "num_replicas": replicas, "sampler_rank": 0}


@pytest.mark.parametrize("same", [True, False])
def test_a_sampler_giving_every_rank_the_same_indices(same):
    findings, _ = merged([start(0), start(1), sampler(0, [3, 1, 2, 0]), sampler(1, [3, 1, 2, 0] if same else [2, 0])])
    found = [f for f in findings if f.code == "TL722"]
    assert bool(found) == same
    if same:
        assert "num_replicas=1" in found[0].message and found[0].location.line == 9


def test_a_needless_find_unused_parameters_is_tl723_without_a_static_twin():
    evidence = {"event": "evidence", "probe": "distributed", "code": None, "runtime_code": "TL723",
                "message": "all 4 parameters got a gradient", "at": [SCRIPT, 15], "sites": [], "data": {}}
    findings, _ = merged([start(0), start(1), dict(evidence, rank=0), dict(evidence, rank=1)])
    assert [f.code for f in findings if f.code.startswith("TL72")] == ["TL723"]


def test_a_static_collective_under_a_rank_condition_is_confirmed_by_the_divergence():
    from torchlint.findings import Finding, Location

    def collective(rank, index, line):
        return {"event": "collective", "rank": rank, "index": index, "op": "all_reduce", "group": "world",
                "fingerprint": [["tensor", "float32[1]"]], "at": [SCRIPT, line], "t": 2.0}

    static = Finding(code="TL803", name="collective-under-rank-condition", message="only some ranks", path=SCRIPT,
                     location=Location(12, 9, 12, 30))
    events = [start(0), start(1), collective(0, 0, 12), collective(0, 1, 14), collective(1, 0, 14),
              {"event": "collective-done", "rank": 0, "index": 0, "group": "world"},
              {"event": "collective-done", "rank": 1, "index": 0, "group": "world"},
              {"event": "collective-done", "rank": 0, "index": 1, "group": "world", "error": "RuntimeError"},
              {"event": "outcome", "rank": 0, "t": 3.0, "status": "raised", "exception": {"type": "RuntimeError", "at": [SCRIPT, 14]}},
              {"event": "outcome", "rank": 1, "t": 2.5, "status": "completed"}]
    findings, _ = merge_ranks([static], result(events), world=2, enabled={"TL803"}, cwd=Path("/p"), timeout=30.0, rules=RULES)
    assert [(f.code, f.evidence[0].status) for f in findings] == [("TL803", "confirmed")]
    assert "train.py:12 ran on rank 0 only" in findings[0].evidence[0].detail
