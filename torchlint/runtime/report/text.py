"""The `torchlint run` report: text for people, JSON for tools."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, TextIO

from torchlint.findings import Finding
from torchlint.notebook.cells import location_text
from torchlint.runtime.merge.matching import CONFIRMED, NOT_PROBED, NOT_REACHED, NOT_REPRODUCED, RUNTIME_ONLY, Outcome

STATUS_ORDER = (CONFIRMED, RUNTIME_ONLY, NOT_REPRODUCED, NOT_REACHED, NOT_PROBED)


def status_of(finding: Finding) -> str:
    return finding.evidence[0].status if finding.evidence else NOT_PROBED


def counts(findings: list[Finding]) -> dict[str, int]:
    tally = Counter(status_of(f) for f in findings)
    return {status: tally.get(status, 0) for status in STATUS_ORDER}


def probe_results(document: dict, results: dict[str, dict]) -> dict[str, dict]:
    """The probes' summaries as JSON report keys, by probe name; a name that is already one of
    the report's own keys (findings, outcome) is kept under `probe:NAME`."""
    return {name if name not in document else f"probe:{name}": data for name, data in results.items()}


def write_text(findings: list[Finding], outcome: Outcome, header: str, stream: TextIO) -> None:
    stream.write(f"{header}: {outcome.summary} ({outcome.seconds:g} s)\n")
    if findings:
        stream.write("\n")  # one blank line before the findings, and one before the tally
    for finding in findings:
        status = status_of(finding)
        stream.write(f"{finding.path}:{location_text(finding)}: {finding.code} [{status}] {finding.message}\n")
        evidence = finding.evidence[0] if finding.evidence else None
        if evidence is None:
            continue
        if status != RUNTIME_ONLY and evidence.detail:
            stream.write(f"    {'evidence' if status == CONFIRMED else 'runtime'}: {evidence.detail}\n")
        ranks = evidence.data.get("ranks")
        if isinstance(ranks, list) and ranks:
            stream.write(f"    {'rank' if len(ranks) == 1 else 'ranks'}: {', '.join(str(r) for r in ranks)}\n")
        for more in evidence.data.get("more", ()):
            stream.write(f"    evidence: {more}\n")
        tail = evidence.data.get("output_tail")
        if tail:
            stream.write("    last output:\n")
            stream.write("".join(f"      | {line}\n" for line in tail.splitlines()[-12:]))
    tally = counts(findings)
    static = sum(n for status, n in tally.items() if status != RUNTIME_ONLY)
    parts = ", ".join(f"{n} {status}" for status, n in tally.items() if n and status != RUNTIME_ONLY)
    stream.write(f"\n{static} static finding{'s' * (static != 1)}" + (f": {parts}" if parts else ""))
    stream.write(f"; {tally[RUNTIME_ONLY]} runtime-only finding{'s' * (tally[RUNTIME_ONLY] != 1)}.\n")


def _rank_of(finding: Finding) -> dict[str, Any]:
    """``rank``: the rank whose evidence this is, in a run of several ranks (absent otherwise)."""
    rank = finding.evidence[0].data.get("rank") if finding.evidence else None
    return {"rank": rank} if isinstance(rank, int) else {}


def write_json(findings: list[Finding], outcome: Outcome, target: dict[str, Any], stream: TextIO) -> None:
    document = {
        "target": target,
        "outcome": {
            "status": outcome.status,
            "summary": outcome.summary,
            "optimizer_steps": outcome.optimizer_steps,
            "forward_calls": outcome.forward_calls,
            "seconds": outcome.seconds,
            **outcome.extra,
        },
        "findings": [dict(f.to_json(), status=status_of(f), **_rank_of(f)) for f in findings],
        "summary": counts(findings),
    }
    json.dump(document, stream, indent=2, ensure_ascii=False)
    stream.write("\n")
