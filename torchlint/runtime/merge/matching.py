"""Turning the child's events into the report's findings (parent side, plain data only).

A static finding of code C is ``confirmed`` when a probe's evidence for C names a line
inside it, ``not reproduced`` when a probe checked C's condition on one of its lines and saw
nothing wrong, ``not reached`` when no probe for C got there, and ``not probed`` when no
installed probe can check C at all. Evidence no static finding explains becomes a runtime-only
finding with the probe's TL7xx code; so do a crash and a timeout.

A rule may also name the error that proves it: ``proven_by = (("TypeError", r"can't convert
cuda"),)`` on the rule class, pairs of an exception type name and a regular expression searched
in its message. When the program dies with such an error and the finding's line is on the
error's traceback (the line raised it, or called what raised it), the finding is
``confirmed`` by the crash, which then needs no TL702 finding of its own.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from torchlint.findings import Evidence, Finding, Location, Severity
from torchlint.runtime.rules import ENGINE_RUNTIME_RULES
from torchlint.runtime.merge.child_result import ChildResult

CONFIRMED, NOT_REPRODUCED, NOT_REACHED, NOT_PROBED = "confirmed", "not reproduced", "not reached", "not probed"
RUNTIME_ONLY = "runtime only"
#: Outcome fields the child adds that the JSON report passes on: what a device mode adds
#: (``DeviceMode.outcome_data``; fake-cuda's ``host_syncs``), and the steps the probes watched
#: when their window closed before the end (``--watch-steps``).
OUTCOME_EXTRA_KEYS = ("host_syncs", "watched_steps", "processes")


@dataclass
class Outcome:
    """How the run ended, in words, for the report's header."""

    status: str  # completed, steps-reached, stopped, exited, raised, killed, timed-out, interrupted, no-outcome (status 0, unfinished)
    summary: str
    optimizer_steps: int = 0
    forward_calls: int = 0
    seconds: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)
    short: str = ""  # the summary without details, e.g. "raised RuntimeError at train.py:20"
    #: What the device mode added to the outcome (fake-cuda: ``host_syncs``), for the JSON report.
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def succeeded(self) -> bool:
        return self.status in ("completed", "steps-reached", "stopped")


def _key(path: str) -> str:
    return os.path.realpath(path)


def display_path(path: str, cwd: Path) -> str:
    try:
        return os.path.relpath(path, cwd) if not os.path.relpath(path, cwd).startswith("..") else path
    except ValueError:
        return path


def merge(static: list[Finding], child: ChildResult, *, enabled: set[str] | frozenset[str], cwd: Path,
          timeout: float, rules: dict[str, type], refuted: Any = ()) -> tuple[list[Finding], Outcome]:
    """``rules``: every code the run knows (the session's registry): a probe's evidence becomes a
    finding under the runtime-only rule its plugin declares. ``refuted``: static findings the
    project phase dropped; one the run's evidence proves is reported, confirmed: runtime
    evidence wins over a static heuristic."""
    start = child.first("start") or {}
    probe_codes = {code for probe in start.get("probes", ()) for code in probe.get("confirms", ())}
    evidence = [e for e in child.events if e["event"] == "evidence" and (e.get("code") is None or e["code"] in enabled)]
    observed: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for event in child.events:
        if event["event"] == "observed":
            observed.setdefault((event["code"], _key(event["path"])), []).append((event["line"], event.get("note", "")))
    outcome = describe_outcome(child, cwd, timeout)
    crash = _Crash.of(outcome)
    static = _with_proven(static, _proven_after_all(refuted, evidence, crash, rules), rules)
    used: set[int] = set()
    findings: list[Finding] = []
    for finding in static:
        proof = crash.proves(finding, rules.get(finding.code)) if crash else None
        findings.append(replace(finding, evidence=(_status_of(finding, evidence, observed, probe_codes, used, outcome, proof),)))
        if proof is not None:
            outcome.data["explained_by"] = outcome.data.get("explained_by") or finding.code
    # Each probe reports under the runtime-only rules its plugin declares, a third party's like
    # the built-in ones.
    known = {**ENGINE_RUNTIME_RULES, **{code: rule for code, rule in rules.items() if getattr(rule, "runtime_only", False)}}
    _explain_by_runtime_finding(outcome, crash, evidence, known)
    # A probe that reports a runtime-only finding whatever the selection, and confirms an
    # off-by-default rule with the same measurement (the dataloader probe's TL741 and TL405),
    # sends two events: once the static finding is confirmed, the other is the same news.
    confirming = {_observation(evidence[index]) for index in used}
    findings = _confirmed_by_runtime_rules(findings, evidence, used, known)
    for index, event in enumerate(evidence):
        code = event.get("runtime_code")
        if index not in used and code in known and event.get("at") and _observation(event) not in confirming:
            findings.append(_runtime_finding(code, event["message"], event["at"], cwd, event, rule=known[code]))
    findings.extend(_outcome_findings(child, outcome, cwd))
    findings.extend(_failed_processes(child, outcome, cwd))
    findings.extend(_probe_crashes(child, cwd))
    return _dedupe(findings), outcome


def _proven_after_all(refuted: Any, evidence: list[dict], crash: _Crash | None = None,
                      rules: dict[str, type] | None = None) -> list[Finding]:
    """Dropped static findings that the run proves: evidence for their code, at their line,
    that the probe would report on its own (not ``confirm_only``), or the very error the rule
    predicts raised through their line (a CUDA checkpoint the static phase took for a
    same-process round trip that fails to load: the crash proves TL301)."""
    proven = []
    for finding in refuted:
        if any(event.get("code") == finding.code and event.get("runtime_code")
               and any(_inside(finding, _key(p), line) for p, line in event.get("sites", ())) for event in evidence):
            proven.append(finding)
        elif crash is not None and rules is not None and crash.proves(finding, rules.get(finding.code)) is not None:
            proven.append(finding)
    return proven


def _explain_by_runtime_finding(outcome: Outcome, crash: _Crash | None, evidence: list[dict], known: dict[str, type]) -> None:
    """One finding per failure: when the program died of the error a runtime rule reports with
    its own evidence (TL709: the compile that failed in the program is the compile the ladder
    ran again), that finding explains the crash and no TL702 stands beside it."""
    if crash is None or outcome.data.get("explained_by"):
        return
    for event in evidence:
        rule = known.get(event.get("runtime_code"))
        data = event.get("data") or {}
        message = str(data.get("message") or "").strip()
        if getattr(rule, "explains_program_error", False) and data.get("error") == crash.type and message \
                and message.splitlines()[0] in crash.message:
            outcome.data["explained_by"] = event["runtime_code"]
            return


def _confirmed_by_runtime_rules(findings: list[Finding], evidence: list[dict], used: set[int],
                                known: dict[str, type]) -> list[Finding]:
    """One status per bug: a runtime-only rule that names the static rules describing the same
    bug (``proves``, TL745's gradients never cleared for TL602's missing zero_grad) confirms a
    static finding at the line it reports, instead of standing beside it as a second finding
    while the static one says no probe checks it."""
    confirmed = list(findings)
    for index, event in enumerate(evidence):
        rule = known.get(event.get("runtime_code"))
        proves = getattr(rule, "proves", ()) if rule is not None else ()
        at = event.get("at")
        if index in used or not proves or not at:
            continue
        for position, finding in enumerate(confirmed):
            status = finding.evidence[0].status if finding.evidence else None
            if finding.code in proves and status != CONFIRMED and _inside(finding, _key(at[0]), int(at[1])):
                data = dict(event.get("data", {}), probe=event.get("probe"), runtime_code=event.get("runtime_code"))
                confirmed[position] = replace(finding, evidence=(Evidence(CONFIRMED, event["message"], data),))
                used.add(index)
                break
    return confirmed


def _with_proven(static: list[Finding], proven: list[Finding], rules: dict[str, type]) -> list[Finding]:
    """``static`` with the ``proven`` findings added, less the findings on the same call that a
    proven one speaks for (``Rule.speaks_for``: TL301's finding naming weights_only too)."""
    replaced = set()
    for finding in proven:
        speaks_for = getattr(rules.get(finding.code), "speaks_for", None)
        for code in speaks_for(finding) if speaks_for else ():
            replaced.add((code, _key(finding.path), finding.location.line))
    return [f for f in static if (f.code, _key(f.path), f.location.line) not in replaced] + proven


def _observation(event: dict) -> tuple:
    """What a probe saw, where: two events with the same one are one observation."""
    at = event.get("at")
    return event.get("probe"), (_key(at[0]), int(at[1])) if at else None, event.get("message")


def _inside(finding: Finding, path_key: str, line: int) -> bool:
    loc = finding.location
    return _key(finding.path) == path_key and loc.line <= line <= max(loc.end_line, loc.line)


def _status_of(finding: Finding, evidence: list[dict], observed: dict, probe_codes: set[str], used: set[int],
               outcome: Outcome, proof: Evidence | None = None) -> Evidence:
    if finding.code not in probe_codes:
        return proof or Evidence(NOT_PROBED, "no runtime probe checks this rule")
    confirmations = []
    for index, event in enumerate(evidence):
        if event.get("code") == finding.code and any(_inside(finding, _key(p), line) for p, line in event.get("sites", ())):
            used.add(index)
            confirmations.append(event)
    if confirmations:
        first = confirmations[0]
        data = dict(first.get("data", {}), probe=first["probe"])
        if len(confirmations) > 1:
            data["more"] = [e["message"] for e in confirmations[1:]]
        return Evidence(CONFIRMED, first["message"], data)
    if proof is not None:
        return proof
    path_key = _key(finding.path)
    for line, note in observed.get((finding.code, path_key), ()):
        if finding.location.line <= line <= max(finding.location.end_line, finding.location.line):
            return Evidence(NOT_REPRODUCED, f"this line ran and {note}" if note else "this line ran without the problem")
    if outcome.succeeded and outcome.status != "stopped":
        return Evidence(NOT_REACHED, "this line did not run")
    crash = _Crash.of(outcome)
    if crash is not None and crash.at is not None and _inside(finding, *crash.at):
        # It ran: the error came out of it, before any probe could check this rule's claim.
        return Evidence(NOT_PROBED, f"this line ran and raised {crash.type} before this could be checked")
    return Evidence(NOT_REACHED, f"this line did not run before the program {outcome.short}")


_TRACEBACK_FRAME = re.compile(r'^  File "(?P<path>[^"]+)", line (?P<line>\d+)', re.MULTILINE)


@dataclass(frozen=True)
class _Crash:
    """The error the program died with, the user line that raised it, and the lines on its traceback."""

    type: str
    message: str
    at: tuple[str, int] | None
    frames: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, outcome: Outcome) -> _Crash | None:
        if outcome.status != "raised" or not outcome.data.get("type"):
            return None
        frames = tuple((_key(m["path"]), int(m["line"])) for m in _TRACEBACK_FRAME.finditer(outcome.data.get("traceback") or ""))
        at = outcome.data.get("at")
        where = (_key(at[0]), int(at[1])) if isinstance(at, list) and len(at) == 2 else None
        return cls(outcome.data["type"], outcome.data.get("message") or "", where, frames + ((where,) if where else ()))

    def proves(self, finding: Finding, rule: type | None) -> Evidence | None:
        # A rule may tell per finding (TL301's finding that also carries TL302's claim).
        errors = rule.errors_proving(finding) if hasattr(rule, "errors_proving") else getattr(rule, "proven_by", ())
        for type_name, pattern in errors or ():
            if type_name != self.type or not re.search(pattern, self.message):
                continue
            path_key = _key(finding.path)
            if not any(path == path_key and _inside(finding, path, line) for path, line in self.frames):
                continue
            first_line = self.message.strip().splitlines()[0] if self.message.strip() else ""
            below = self.at is not None and not _inside(finding, *self.at)
            where = f" at {os.path.basename(self.at[0])}:{self.at[1]} (called from this line)" if below else ""
            return Evidence(CONFIRMED, f"the program raised {self.type}{where}, the error this rule predicts: {first_line}",
                            {"exception": self.type, "message": first_line, "raised_at": list(self.at) if self.at else None})
        return None


def _location(line: int) -> Location:
    return Location(line, 1, line, 1)


def _runtime_finding(code: str, message: str, at: list, cwd: Path, event: dict | None = None,
                     severity: Severity | None = None, rule: type | None = None) -> Finding:
    rule = rule or ENGINE_RUNTIME_RULES[code]
    data = dict((event or {}).get("data", {}))
    if event and event.get("probe"):
        data["probe"] = event["probe"]
    return Finding(
        code=code,
        name=rule.name,
        message=message,
        path=display_path(at[0], cwd),
        location=_location(int(at[1])),
        severity=severity or rule.severity,
        evidence=(Evidence(RUNTIME_ONLY, message, data),),
    )


def describe_outcome(child: ChildResult, cwd: Path, timeout: float) -> Outcome:
    event = child.first("outcome")
    stopped = child.first("timed-out")  # the child's watchdog: where it was, exact counts
    last = [e for e in child.events if e["event"] == "progress"]
    known = event or stopped or (last[-1] if last else {})
    steps = known.get("optimizer_steps", 0)
    forwards = known.get("forward_calls", 0)
    counts = dict(optimizer_steps=steps, forward_calls=forwards, seconds=round(child.seconds, 2))
    counts["extra"] = {key: (event or {})[key] for key in OUTCOME_EXTRA_KEYS if key in (event or {})}
    far = f"after {steps} optimizer step{'s' * (steps != 1)} and {forwards} forward call{'s' * (forwards != 1)}"
    if child.stopped_by and event is None:
        return Outcome("interrupted", f"was stopped by {child.stopped_by} sent to torchlint {far}; what was gathered "
                       "until then is reported", short=f"was stopped by {child.stopped_by}", **counts)
    if child.timed_out and event is None:
        return _timed_out(child, stopped, far, cwd, timeout, counts)
    if event is None:
        if child.signal_name:
            return Outcome("killed", f"was killed by {child.signal_name} {far}", short=f"was killed by {child.signal_name}", **counts)
        return _unfinished(child, far, cwd, counts)
    status = event["status"]
    elsewhere = _started_elsewhere(counts["extra"].get("processes") or (), cwd)
    if status == "completed":
        return Outcome(status, f"completed {far}{elsewhere}", **counts)
    if status == "steps-reached":
        return Outcome(status, f"stopped as asked {far}{elsewhere}", **counts)
    if status == "stopped":
        where = f" at {display_path(event['at'][0], cwd)}:{event['at'][1]}" if event.get("at") else ""
        return Outcome(status, f"stopped{where} {far}: {event.get('detail', '')}", data={"at": event.get("at")},
                       short=f"stopped{where} ({event.get('detail', '')})", **counts)
    if status == "exited":
        return Outcome(status, f"called sys.exit({event.get('exit_code')}) {far}", data=event,
                       short=f"called sys.exit({event.get('exit_code')})", **counts)
    exception = event.get("exception", {})
    where = f" at {display_path(exception['at'][0], cwd)}:{exception['at'][1]}" if exception.get("at") else ""
    return Outcome("raised", f"raised {exception.get('type')}{where} {far}: {exception.get('message', '')}".rstrip(": "),
                   data=exception, short=f"raised {exception.get('type')}{where}", **counts)


def _started_elsewhere(processes: list | tuple, cwd: Path) -> str:
    """'; 4 processes it started (at train.py:40) ran without probes': where the training may
    really have happened."""
    count = sum(started.get("started", 0) for started in processes)
    if not count:
        return ""
    places = ", ".join(f"{display_path(started['at'][0], cwd)}:{started['at'][1]}" for started in processes)
    return f"; {count} process{'es' * (count != 1)} it started (at {places}) ran without torchlint's probes"


def _timed_out(child: ChildResult, stopped: dict | None, far: str, cwd: Path, timeout: float, counts: dict) -> Outcome:
    """Where the target was when time ran out: the watchdog's event, or faulthandler's dump
    when the target held the interpreter lock and the watchdog could not run."""
    at = stopped.get("at") if stopped else None
    data: dict[str, Any] = {}
    if stopped is None:
        from torchlint.runtime.merge.faulthandler_dump import user_line_from_dump

        found = user_line_from_dump(child.output_tail, _user_file)
        at = list(found) if found else None
        data["source"] = "faulthandler"
    elif stopped.get("stack"):
        data["stack"] = stopped["stack"]
    if stopped is not None and stopped.get("phase") == "setup":
        return Outcome("timed-out", f"timed out after {timeout:g} s before the program started (torchlint was still "
                       "starting: importing torch, installing its probes); its process group was killed",
                       short=f"timed out after {timeout:g} s", data=data, **counts)
    where = ""
    if isinstance(at, list) and len(at) == 2:
        data["at"] = at
        where = f" at {display_path(at[0], cwd)}:{at[1]}"
        source = next((frame[3] for frame in reversed(data.get("stack", ())) if frame[:2] == at and frame[3]), "")
        where += f" `{source}`" if source else ""
    return Outcome("timed-out", f"timed out after {timeout:g} s{where} ({far}); its process group was killed",
                   short=f"timed out after {timeout:g} s{where.split(' `')[0]}", data=data, **counts)


def _user_file(path: str) -> bool:
    from torchlint.runtime.frames import USER, FrameClassifier, own_dirs

    global _PARENT_FRAMES
    if _PARENT_FRAMES is None:
        _PARENT_FRAMES = FrameClassifier(own_dirs())
    return _PARENT_FRAMES.verdict(path) == USER


_PARENT_FRAMES = None


def _unfinished(child: ChildResult, far: str, cwd: Path, counts: dict) -> Outcome:
    """The child ended without its ``outcome`` event. Never a success, even with status 0:
    the target left early (``os._exit``) or the evidence channel was lost on the way."""
    status = "no-outcome" if child.returncode == 0 else "exited"
    left = child.first("os-exit")
    if left is not None:
        where = f" at {display_path(left['at'][0], cwd)}:{left['at'][1]}" if left.get("at") else ""
        call = f"called os._exit({left.get('code')}){where}"
        return Outcome(status, f"{call} without finishing under torchlint {far}", data={"at": left.get("at")},
                       short=call, **counts)
    if not child.events:
        return Outcome(status, f"exited with status {child.returncode} and sent no evidence (torchlint's evidence "
                       "channel was lost): the run cannot be checked", short=f"exited with status {child.returncode}", **counts)
    return Outcome(status, f"exited with status {child.returncode} without finishing under torchlint {far} (it never "
                   "reported how it ended: an os._exit, or its evidence channel was lost)",
                   short=f"exited with status {child.returncode}", **counts)


def _outcome_findings(child: ChildResult, outcome: Outcome, cwd: Path) -> list[Finding]:
    if outcome.status == "interrupted":
        return []  # the user stopped it: the header says so, and nothing in the program failed
    tail = _tail(child.output_tail)
    if outcome.status == "timed-out" or (child.timed_out and outcome.succeeded):
        if not outcome.succeeded:
            return [_crash("TL703", f"the program {outcome.summary}", outcome, child, cwd, tail)]
        at = (child.first("timed-out") or {}).get("at")  # the line of the thread that kept it alive
        return [_crash("TL703", _late_exit(child, cwd), outcome, child, cwd, tail, at=at if isinstance(at, list) else None)]
    if outcome.succeeded and not child.signal_name:
        return []
    if outcome.status == "raised" and outcome.data.get("explained_by"):
        return []  # the evidence that explains the exception is already in the report
    message = f"the program {outcome.summary}"
    if child.signal_name and outcome.succeeded:
        message = f"the program finished but its interpreter died by {child.signal_name} while shutting down"
    return [_crash("TL702", message, outcome, child, cwd, tail)]


def _late_exit(child: ChildResult, cwd: Path) -> str:
    stopped = child.first("timed-out") or {}
    if stopped.get("phase") == "after-run":
        return ("the program finished, but torchlint's work after it (the compile ladder, the profile analysis) did not "
                "finish before the timeout")
    threads = [f"thread {t['name']!r} at {display_path(t['at'][0], cwd)}:{t['at'][1]}" for t in stopped.get("threads", ())]
    held = f" ({', '.join(threads)} kept it alive)" if threads else " (a thread or child process kept it alive)"
    return f"the program finished but did not exit before the timeout{held}"


def _crash(code: str, message: str, outcome: Outcome, child: ChildResult, cwd: Path, tail: str,
           at: list | None = None) -> Finding:
    at = at or (outcome.data.get("at") if isinstance(outcome.data.get("at"), list) else None)
    if at is None:
        at = [child.script, 1]
    finding = _runtime_finding(code, message, at, cwd)
    data = {"output_tail": tail, "returncode": child.returncode}
    for key in ("traceback", "stack"):
        if outcome.data.get(key):
            data[key] = outcome.data[key]
    return replace(finding, evidence=(Evidence(RUNTIME_ONLY, message, data),))


def _failed_processes(child: ChildResult, outcome: Outcome, cwd: Path) -> list[Finding]:
    """TL702 at each line whose processes (``multiprocessing``, ``torch.multiprocessing.spawn``)
    exited with an error: the main process may finish cleanly while all the training failed."""
    found = []
    fake = (child.first("start") or {}).get("device") == "fake-cuda"
    for started in outcome.extra.get("processes", ()):
        failed = [code for code in started.get("exit_codes", ()) if code not in (0, None)]
        if not failed:
            continue
        count = started.get("started", len(started.get("exit_codes", ())))
        codes = ", ".join(str(code) for code in sorted(set(failed)))
        where = f"{display_path(started['at'][0], cwd)}:{started['at'][1]}"
        message = (f"{len(failed)} of the {count} process{'es' * (count != 1)} the program started at {where} "
                   f"exited with an error (exit code {codes}); torchlint's probes do not run in them")
        if fake:
            message += (", nor does the simulated GPU: under --device fake-cuda such a process sees no CUDA (run it "
                        "with --device cpu, or let torchlint start the ranks: --nproc-per-node N)")
        found.append(_runtime_finding("TL702", message, started["at"], cwd))
    return found


def _probe_crashes(child: ChildResult, cwd: Path) -> list[Finding]:
    crashes = []
    for event in child.events:
        if event["event"] == "probe-crashed":
            at = [child.script, 1]
            crashes.append(_runtime_finding("TL707", event["message"], at, cwd, severity=Severity.WARNING))
    return crashes


def _tail(text: str, lines: int = 20) -> str:
    kept = text.splitlines()[-lines:]
    return "\n".join(line[:500] for line in kept)


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen = set()
    unique = []
    for finding in findings:
        key = (finding.code, finding.path, finding.location.line, finding.message)
        if key not in seen:
            seen.add(key)
            unique.append(finding)
    return sorted(unique, key=Finding.sort_key)
