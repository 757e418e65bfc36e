"""One report for N ranks; parent side, plain data only.

Every rank is an ordinary probed child and sends its own events, each naming its ``rank``.
``merge_ranks`` turns them into the report of one run:

- evidence seen on several ranks is one piece of evidence, with ``rank`` (the first rank
  that saw it) and ``ranks`` (all of them) in its data;
- the run's outcome is the rank that failed first (the launcher then stops the others), or
  rank 0's when none failed; a timeout shows each rank's user line;
- what only comparing ranks shows is added: collectives that diverged (TL719, TL720, from the
  live monitor's verdict or from the sequences after the run), parameters that differ after
  a step (TL721, from digests after steps 1, 2, 4, 8, ...), samplers that gave every rank the same indices (TL722).
"""

from __future__ import annotations

import functools
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from torchlint.findings import Evidence, Finding, Severity
from torchlint.runtime.distributed.divergence import Divergence, Side, timelines_of
from torchlint.plugins.probes.distributed import RULES as DISTRIBUTED_RULES
from torchlint.runtime.merge.matching import CONFIRMED, RUNTIME_ONLY, Outcome, _runtime_finding, display_path, merge
from torchlint.runtime.merge.child_result import ChildResult

_FAILED = ("raised", "exited")
_ORDINALS = {1: "st", 2: "nd", 3: "rd"}


def merge_ranks(static: list[Finding], child: ChildResult, *, world: int, enabled: Any, cwd: Path, timeout: float,
                rules: dict, refuted: list[Finding] = ()) -> tuple[list[Finding], Outcome]:
    ranks = _by_rank(child.events)
    primary = _primary_rank(ranks)
    verdict = child.first("diverged")
    timelines = timelines_of(child.events, world)
    divergence = None
    if verdict is not None:
        divergence = timelines.mismatch() if verdict.get("reason") == "mismatch" else None
        if divergence is None:
            divergence = timelines._first_difference(verdict.get("group", "world"))  # noqa: SLF001 - the verdict's group
        divergence.waiting = _waiting_of(verdict, timelines)
    elif len(ranks) == world:
        divergence = timelines.after_run()
    view = replace(child, events=_merged_events(child.events, ranks, primary, divergence, verdict, cwd))
    findings, outcome = merge(static, view, enabled=enabled, cwd=cwd, timeout=timeout, rules=rules, refuted=refuted)
    findings = [_with_ranks(finding, primary, ranks, cwd, outcome) for finding in findings]
    extra: list[Finding] = []
    if divergence is not None and divergence.culprit and divergence.culprit.at:
        found = _divergence_finding(divergence, cwd)
        confirmed = _confirm_rank_condition(findings, found, cwd)
        findings = [confirmed.get(id(f), f) for f in findings]
        if not confirmed:
            extra.append(found)
        if _failed_in_collective(ranks.get(primary, [])):
            # The backend's error (a peer gone, its timeout) is what the divergence caused.
            findings = [f for f in findings if f.code != "TL702"]
    extra += _parameter_findings(child.events, world, cwd)
    extra += _sampler_findings(child.events, world, cwd)
    findings = _drop_unneeded_flag_twins(findings + extra)
    _label_outcome(outcome, primary, ranks, world, divergence, cwd)
    outcome.extra["world_size"] = world
    notes = sorted({e["message"] for e in child.events if e["event"] == "distributed-note"})
    if notes:
        outcome.extra["distributed_notes"] = notes
        outcome.summary += f" ({'; '.join(notes)})"
    return sorted(findings, key=Finding.sort_key), outcome


# -- events ------------------------------------------------------------------------------------
def _by_rank(events: list[dict]) -> dict[int, list[dict]]:
    ranks: dict[int, list[dict]] = {}
    for event in events:
        if isinstance(event.get("rank"), int):
            ranks.setdefault(event["rank"], []).append(event)
    return ranks


def _primary_rank(ranks: dict[int, list[dict]]) -> int:
    """The rank whose ending is the run's: the first to fail, else the first to time out,
    else rank 0."""
    def first(kind: str, test: Any) -> list[tuple[float, int]]:
        return sorted((float(e.get("t", 0)), rank) for rank, events in ranks.items() for e in events
                      if e["event"] == kind and test(e))

    for candidates in (first("outcome", lambda e: e.get("status") in _FAILED), first("os-exit", lambda e: True)):
        if candidates:
            return candidates[0][1]
    # Every rank times out at the same deadline: the lowest one speaks for the run.
    timed_out = [rank for _, rank in first("timed-out", lambda e: True)]
    return min(timed_out or ranks or [0])


_ONE_PER_RUN = ("start", "outcome", "timed-out", "os-exit", "progress")


def _merged_events(events: list[dict], ranks: dict[int, list[dict]], primary: int, divergence: Divergence | None,
                   verdict: dict | None, cwd: Path) -> list[dict]:
    """The events of one run: the primary rank's own ending, everyone's evidence once."""
    merged: list[dict] = []
    evidence: dict[tuple, dict] = {}
    for event in events:
        kind = event["event"]
        if kind in _ONE_PER_RUN:
            if event.get("rank", primary) == primary:
                merged.append(event)
        elif kind == "evidence":
            key = (event.get("probe"), event.get("code"), event.get("runtime_code"), str(event.get("at")), event.get("message"))
            if key in evidence:
                evidence[key]["data"]["ranks"].append(event.get("rank"))
            else:
                copy = dict(event, data=dict(event.get("data") or {}, rank=event.get("rank"), ranks=[event.get("rank")]))
                evidence[key] = copy
                merged.append(copy)
        elif kind == "probe-crashed":
            if not any(e["event"] == kind and e.get("message") == event.get("message") for e in merged):
                merged.append(event)
        else:
            merged.append(event)
    if verdict is not None and not any(e["event"] == "outcome" for e in merged):
        # Stopped by us: the divergence finding says why; the run itself ended as asked.
        at = divergence.culprit.at if divergence and divergence.culprit else None
        merged.append({"event": "outcome", "status": "stopped", "rank": primary, "at": list(at) if at else None,
                       "detail": "the ranks' collectives diverged; every rank was stopped",
                       **_last_counts(ranks.get(primary, []))})
    return merged


def _last_counts(events: list[dict]) -> dict[str, int]:
    progress = [e for e in events if e["event"] == "progress"]
    last = progress[-1] if progress else {}
    return {"optimizer_steps": last.get("optimizer_steps", 0), "forward_calls": last.get("forward_calls", 0)}


def _waiting_of(verdict: dict, timelines: Any) -> list:
    waiting = []
    for rank, at, op, seconds in verdict.get("waiting", ()):
        calls = [c for by_rank in timelines.calls.values() for c in by_rank.get(rank, ()) if list(c.at or ()) == at]
        if calls:
            waiting.append((rank, calls[-1], seconds))
    return waiting


# -- findings ---------------------------------------------------------------------------------
def _with_ranks(finding: Finding, primary: int, ranks: dict[int, list[dict]], cwd: Path, outcome: Outcome) -> Finding:
    """Which ranks each piece of evidence came from; a crash or timeout names its rank, and
    a timeout where every other rank was."""
    if not finding.evidence:
        return finding
    evidence = finding.evidence[0]
    data = dict(evidence.data)
    if finding.code in ("TL702", "TL703") and evidence.status == RUNTIME_ONLY:
        data.setdefault("rank", primary)
        message = finding.message.replace("the program ", f"rank {primary} ", 1)
        more = list(data.get("more", ()))
        if finding.code == "TL702":
            more += _other_ranks(primary, ranks, cwd)
        if finding.code == "TL703":
            stacks = {}
            for rank, events in sorted(ranks.items()):
                stopped = next((e for e in events if e["event"] == "timed-out"), None)
                if stopped and stopped.get("at"):
                    stacks[str(rank)] = stopped.get("stack", [])
                    if rank != primary:
                        more.append(f"rank {rank} was at {_where(stopped['at'], cwd)}{_source_of(stopped)}")
            data["ranks"] = stacks
        if more:
            data["more"] = more
        return replace(finding, message=message, evidence=(replace(evidence, detail=message, data=data),))
    if "ranks" in data:
        data["ranks"] = sorted(set(data["ranks"]))
        return replace(finding, evidence=(replace(evidence, data=data),))
    return finding


def _other_ranks(primary: int, ranks: dict[int, list[dict]], cwd: Path) -> list[str]:
    """Where each other rank was when the failing rank took the run down."""
    lines = []
    for rank, events in sorted(ranks.items()):
        if rank == primary:
            continue
        outcome = next((e for e in events if e["event"] == "outcome"), None)
        exception = (outcome or {}).get("exception") or {}
        calls = [e for e in events if e["event"] == "collective"]
        if outcome and outcome.get("status") == "raised":
            lines.append(f"rank {rank} then raised {exception.get('type')} at {_where(exception.get('at'), cwd)}")
        elif outcome:
            lines.append(f"rank {rank} had {outcome.get('status')}")
        elif calls:
            lines.append(f"rank {rank} was stopped; its last collective was `{calls[-1].get('op')}` at {_where(calls[-1].get('at'), cwd)}")
        else:
            lines.append(f"rank {rank} was stopped")
    return lines


def _divergence_finding(divergence: Divergence, cwd: Path) -> Finding:
    position = divergence.index + 1
    ordinal = f"{position}{_ORDINALS.get(position % 10 if position % 100 not in (11, 12, 13) else 0, 'th')}"
    group = "the default group" if divergence.group == "world" else f"the group of {divergence.group}"
    sides = "; ".join(_side(side, cwd) for side in divergence.sides)
    what = "called this collective with different arguments" if divergence.kind == "shape" else "diverged"
    message = f"the ranks {what} at their {ordinal} collective on {group}: {sides}"
    if divergence.detail:
        message += f"; {divergence.detail}"
    culprit = divergence.culprit
    others = [side for side in divergence.sides if culprit and culprit.rank not in side.ranks]
    if divergence.kind == "order" and culprit and culprit.at and others:
        only = next(side.ranks for side in divergence.sides if culprit.rank in side.ranks)
        message += f"; {_where(culprit.at, cwd)} ran on {_ranks(only)} only"
    for rank, call, seconds in divergence.waiting[:4]:
        message += f"; rank {rank} then waited {seconds:g} s in `{call.op}` at {_where(call.at, cwd)}"
    if divergence.waiting:
        message += " (stopped there, long before the backend's timeout)"
    data = {"group": divergence.group, "index": divergence.index,
            "sides": [{"ranks": side.ranks, "op": side.call.op if side.call else None,
                       "at": list(side.call.at) if side.call and side.call.at else None,
                       "arguments": [list(pair) for pair in side.call.fingerprint] if side.call else None,
                       "state": side.state} for side in divergence.sides],
            "rank": culprit.rank if culprit else None, "ranks": sorted(r for side in divergence.sides for r in side.ranks)}
    finding = _runtime_finding(divergence.code, message, list(culprit.at), cwd, rule=DISTRIBUTED_RULES[divergence.code])
    return replace(finding, evidence=(Evidence(RUNTIME_ONLY, message, data),))


def _side(side: Side, cwd: Path) -> str:
    if side.call is None:
        return f"{_ranks(side.ranks)} called none ({side.state})"
    arguments = ", ".join(f"{value}" if name in ("tensor", "input", "output") else f"{name}={value}"
                          for name, value in (pair if isinstance(pair, (list, tuple)) else (pair, "") for pair in side.call.fingerprint))
    return f"{_ranks(side.ranks)} called `{side.call.op}({arguments})` at {_where(side.call.at, cwd)}"


def _confirm_rank_condition(findings: list[Finding], divergence: Finding, cwd: Path) -> dict[int, Finding]:
    """The static finding of a collective under a rank condition (TL803) on the line only some
    ranks ran is what the divergence proves: confirmed, by id of the finding it replaces."""
    line = divergence.location.line
    same_file = functools.partial(_same_file, cwd, divergence.path)
    confirmed = {}
    for finding in findings:
        loc = finding.location
        if finding.code == "TL803" and same_file(finding.path) and loc.line <= line <= max(loc.end_line, loc.line):
            evidence = divergence.evidence[0]
            confirmed[id(finding)] = replace(finding, evidence=(Evidence(CONFIRMED, evidence.detail, dict(evidence.data)),))
    return confirmed


def _same_file(cwd: Path, first: str, second: str) -> bool:
    return os.path.realpath(os.path.join(cwd, first)) == os.path.realpath(os.path.join(cwd, second))


def _failed_in_collective(events: list[dict]) -> bool:
    done = [e for e in events if e["event"] == "collective-done"]
    return bool(done) and bool(done[-1].get("error"))


def _parameter_findings(events: list[dict], world: int, cwd: Path) -> list[Finding]:
    """TL721: the first step after which a tensor's digest is not the same on every rank
    (ranks digest after steps 1, 2, 4, 8, ...). Buffers DDP re-broadcasts from rank 0 at the
    next forward (``broadcast_buffers``, on by default) may differ after a step: not reported."""
    by_step: dict[int, dict[int, dict]] = {}
    for event in events:
        if event["event"] == "param-digest" and isinstance(event.get("rank"), int):
            by_step.setdefault(int(event.get("step") or 1), {})[event["rank"]] = event
    findings = []
    reported: set[str] = set()
    equal_after: int | None = None
    for step_number in sorted(by_step):
        digests = by_step[step_number]
        if len(digests) < 2:
            continue
        found = _differing_digests(digests, step_number, equal_after, cwd, reported)
        findings += found
        if not found:
            equal_after = step_number
        if {"parameter", "buffer"} <= reported:
            break
    return findings


def _differing_digests(digests: dict[int, dict], step_number: int, equal_after: int | None, cwd: Path,
                       reported: set[str]) -> list[Finding]:
    tables = {rank: {row[0]: row for row in event.get("tensors", ())} for rank, event in digests.items()}
    base_rank = min(tables)
    step = digests[base_rank]
    rebroadcast = bool(step.get("broadcast_buffers"))
    differing: dict[str, list] = {"parameter": [], "buffer": []}
    for name, row in tables[base_rank].items():
        if row[1] in reported or (row[1] == "buffer" and rebroadcast):
            continue
        values = {rank: tuple(table[name][2:4]) for rank, table in tables.items() if name in table}
        if len(set(values.values())) > 1:
            groups: dict[tuple, list[int]] = {}
            for rank, value in sorted(values.items()):
                groups.setdefault(value, []).append(rank)
            differing[row[1]].append((name, list(groups.values())))
    findings = []
    if not step.get("at"):
        return []
    when = "after the first optimizer step" if step_number == 1 else f"after optimizer step {step_number}"
    if equal_after is not None:
        when += f" (they were equal after step {equal_after})"
    for kind, rows in differing.items():
        if not rows:
            continue
        reported.add(kind)
        total = sum(1 for row in tables[base_rank].values() if row[1] == kind)
        names = ", ".join(f"{name} ({' vs '.join(_ranks(g) for g in groups)})" for name, groups in rows[:6])
        more = f" and {len(rows) - 6} more" if len(rows) > 6 else ""
        if kind == "buffer":
            why = ("BatchNorm statistics computed from each rank's own batch: convert the model with "
                   "nn.SyncBatchNorm.convert_sync_batchnorm, or keep DDP's broadcast_buffers")
        elif step_number == 1:
            why = ("the model was initialised differently on each rank (a rank-dependent seed or load) or its gradients "
                   "were not averaged")
        else:
            why = ("the ranks drifted apart during training: an update applied on some ranks only (gradient clipping or "
                   "a change of the weights under a rank condition), or data lost in a copy between ranks")
        message = (f"{when}, {len(rows)} of {total} {kind}s of `{step.get('model')}` differ across "
                   f"ranks: {names}{more}; {why}")
        # Buffers that differ are usually BatchNorm statistics: worth knowing, not the error
        # different weights are.
        finding = _runtime_finding("TL721", message, step["at"], cwd, severity=None if kind == "parameter" else Severity.WARNING,
                                   rule=DISTRIBUTED_RULES["TL721"])
        data = {"tensors": [{"name": name, "ranks": groups} for name, groups in rows], "kind": kind, "ranks": sorted(tables),
                "step": step_number}
        findings.append(replace(finding, evidence=(Evidence(RUNTIME_ONLY, message, data),)))
    return findings


def _sampler_findings(events: list[dict], world: int, cwd: Path) -> list[Finding]:
    """TL722: a DistributedSampler (by its construction line) that gave every rank the same
    indices."""
    by_site: dict[str, dict[int, dict]] = {}
    for event in events:
        if event["event"] == "sampler-indices" and event.get("at") and isinstance(event.get("rank"), int):
            by_site.setdefault(str(event["at"]), {}).setdefault(event["rank"], event)
    findings = []
    for per_rank in by_site.values():
        if len(per_rank) < 2 or len({tuple(e.get("indices", ())) for e in per_rank.values()}) != 1:
            continue
        first = per_rank[min(per_rank)]
        if len(first.get("indices", ())) < 2:
            continue
        replicas = first.get("num_replicas")
        how = (f"it was built with num_replicas={replicas}" if replicas != world
               else f"it was built with the same rank ({first.get('sampler_rank')}) on every rank")
        message = (f"this DistributedSampler gave all {len(per_rank)} ranks the same {first.get('count')} indices "
                   f"(first: {first['indices'][:5]}): {how}, so every rank trains on the same data")
        finding = _runtime_finding("TL722", message, first["at"], cwd, rule=DISTRIBUTED_RULES["TL722"])
        findings.append(replace(finding, evidence=(Evidence(RUNTIME_ONLY, message, {"ranks": sorted(per_rank),
                                                                                      "num_replicas": replicas}),)))
    return findings


def _drop_unneeded_flag_twins(findings: list[Finding]) -> list[Finding]:
    """The distributed probe reports a needless find_unused_parameters both for the static
    rule's finding (TL807) and as TL723; keep TL723 only where TL807 was not confirmed."""
    confirmed = {(f.path, f.location.line) for f in findings
                 if f.code == "TL807" and f.evidence and f.evidence[0].status == CONFIRMED}
    return [f for f in findings if not (f.code == "TL723" and (f.path, f.location.line) in confirmed)]


def _label_outcome(outcome: Outcome, primary: int, ranks: dict, world: int, divergence: Divergence | None, cwd: Path) -> None:
    finished = [rank for rank in range(world) if rank != primary and any(
        e["event"] == "outcome" and e.get("status") in ("completed", "steps-reached") for e in ranks.get(rank, ()))]
    failed = [rank for rank in range(world) if rank != primary and any(
        e["event"] == "outcome" and e.get("status") in _FAILED for e in ranks.get(rank, ()))]
    stopped = [rank for rank in range(world) if rank != primary and rank not in finished and rank not in failed]
    if outcome.status in ("raised", "exited", "killed", "no-outcome", "timed-out"):
        others = ""
        if finished:
            others += f"; {_ranks(finished)} had finished"
        if failed:
            others += f"; {_ranks(failed)} failed next"
        if stopped and outcome.status != "timed-out":
            others += f"; {_ranks(stopped)} {'were' if len(stopped) > 1 else 'was'} stopped"
        outcome.summary = f"rank {primary} {outcome.summary}{others}"
        outcome.short = f"rank {primary} {outcome.short}" if outcome.short else outcome.short
    elif outcome.status == "stopped" and divergence is not None:
        outcome.summary = f"was stopped: the ranks' collectives diverged ({_ranks(list(range(world)))} stopped) " \
                          f"after {outcome.optimizer_steps} optimizer steps on rank {primary}"
    else:
        outcome.summary = f"{outcome.summary} on {world} ranks"


def _ranks(ranks: list[int]) -> str:
    ranks = sorted(ranks)
    return f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(str(r) for r in ranks)


def _where(at: Any, cwd: Path) -> str:
    if not at:
        return "an unknown line"
    return f"{display_path(str(at[0]), cwd)}:{at[1]}"


def _source_of(event: dict) -> str:
    stack = event.get("stack") or []
    source = stack[-1][3] if stack and len(stack[-1]) > 3 else ""
    return f" `{source}`" if source else ""
