"""The parent's comparison of the ranks' collectives, on events as the ranks send them
(no process started)."""

from __future__ import annotations

from torchlint.runtime.distributed.divergence import ORDER, SHAPE, Timelines, timelines_of
from torchlint.runtime.distributed.monitor import DivergenceMonitor
from torchlint.runtime.events import encode_event


def call(rank, index, line, op="all_reduce", shape="float32[1]", t=0.0, group="world"):
    return {"event": "collective", "rank": rank, "index": index, "op": op, "group": group,
            "fingerprint": [["tensor", shape]] if shape else [], "at": ["/p/train.py", line], "t": t}


def done(rank, index, t=0.0, error=None, group="world"):
    event = {"event": "collective-done", "rank": rank, "index": index, "group": group, "t": t}
    if error:
        event["error"] = error
    return event


def outcome(rank, status="completed"):
    return {"event": "outcome", "rank": rank, "status": status}


def test_a_collective_only_rank_0_calls_is_the_first_difference_and_the_culprit():
    events = [call(0, 0, 12), done(0, 0), call(0, 1, 14), done(0, 1, error="RuntimeError"), outcome(0, "raised"),
              call(1, 0, 14), done(1, 0), outcome(1)]
    found = timelines_of(events, 2).after_run()
    assert found is not None and found.kind == ORDER and found.code == "TL719"
    assert found.index == 0 and found.culprit.rank == 0 and found.culprit.at == ("/p/train.py", 12)
    assert [side.ranks for side in found.sides] == [[0], [1]]


def test_same_calls_on_every_rank_are_no_divergence():
    events = [call(r, i, 10 + i) for r in (0, 1) for i in range(3)] + [done(r, i) for r in (0, 1) for i in range(3)]
    events += [outcome(0), outcome(1)]
    timelines = timelines_of(events, 2)
    assert timelines.mismatch() is None and timelines.after_run() is None and timelines.hang(100.0) is None


def test_different_shapes_at_the_same_call_are_a_shape_mismatch_at_once():
    timelines = timelines_of([call(0, 0, 12, shape="float32[3]"), call(1, 0, 12, shape="float32[2]")], 2)
    found = timelines.mismatch()
    assert found is not None and found.kind == SHAPE and found.code == "TL720"
    assert {side.call.fingerprint for side in found.sides} == {(("tensor", "float32[3]"),), (("tensor", "float32[2]"),)}


def test_different_operations_at_the_same_index_are_an_order_divergence():
    found = timelines_of([call(0, 0, 5, op="barrier", shape=None), call(1, 0, 7, op="all_reduce")], 2).mismatch()
    assert found is not None and found.kind == ORDER


def test_a_rank_that_ended_while_another_waits_is_a_hang_after_the_grace_period_only():
    timelines = Timelines(2)
    for event in (call(0, 0, 12), call(1, 0, 14), done(0, 0), done(1, 0), outcome(1)):
        timelines.add(event, now=0.0)
    timelines.add(call(0, 1, 14), now=1.0)
    assert timelines.hang(now=2.0, after=3.0) is None  # waited 1 s: could still be a slow peer
    found = timelines.hang(now=4.5, after=3.0)
    assert found is not None and found.waiting[0][0] == 0 and found.culprit.at == ("/p/train.py", 12)


def test_a_rank_still_computing_is_waited_for():
    timelines = Timelines(2)
    timelines.add(call(0, 0, 12), now=0.0)
    assert timelines.hang(now=100.0, after=3.0) is None  # rank 1 has not reached a collective yet


def test_every_rank_waiting_in_the_same_collective_is_left_to_the_timeout():
    timelines = Timelines(2)
    timelines.add(call(0, 0, 12), now=0.0)
    timelines.add(call(1, 0, 12), now=0.0)
    assert timelines.hang(now=100.0, after=3.0) is None


def test_a_crash_outside_collectives_is_no_divergence():
    events = [call(0, 0, 12), call(0, 1, 13), outcome(0), call(1, 0, 12), done(0, 0), done(1, 0), outcome(1, "raised")]
    assert timelines_of(events, 2).after_run() is None


def test_subgroups_are_compared_on_their_own():
    events = [call(0, 0, 5, group="ranks 0,1"), call(1, 0, 5, group="ranks 0,1"), call(0, 0, 9), call(1, 0, 9)]
    assert timelines_of(events, 2).mismatch() is None


def test_the_monitor_reads_only_complete_lines_and_answers_with_a_verdict():
    clock = [0.0]
    monitor = DivergenceMonitor(2, hang_after=3.0, clock=lambda: clock[0])
    rank0 = encode_event("collective", {k: v for k, v in call(0, 0, 12, shape="float32[3]").items() if k != "event"})
    rank1 = encode_event("collective", {k: v for k, v in call(1, 0, 12, shape="float32[2]").items() if k != "event"})
    assert monitor.check([b"", rank0, rank1[:-10]]) is None  # rank 1's event is not complete yet
    verdict = monitor.check([b"", rank0, rank1])
    assert verdict is not None and verdict["event"] == "diverged" and verdict["reason"] == "mismatch"
