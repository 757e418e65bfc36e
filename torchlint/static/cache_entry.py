"""What a cache entry must look like to be used: exactly the shape `FileResult.to_json` writes.

An entry is read back from a folder anyone with write access to the tree can edit. A wrong
type that `Finding.from_json` would accept (a code that is a number, a row that is a string)
would surface later as a crash in a formatter, or as a finding silently dropped; checked
here, any such entry is a miss, and the file is checked afresh.

Deeper than a finding, file facts are each plugin's own JSON: only their top level (an
object keyed by strings) is checked.
"""

from __future__ import annotations

from typing import Any

_SEVERITIES = frozenset({"error", "warning", "info"})
_APPLICABILITY = frozenset({"safe", "unsafe"})
_EVIDENCE = {"status": str, "detail": str, "data": dict}


def valid_entry(data: Any, key: str) -> bool:
    if not isinstance(data, dict) or data.get("key") != key:
        return False
    findings, facts, parsed = data.get("findings"), data.get("facts", {}), data.get("parsed", False)
    return (
        isinstance(findings, list)
        and all(_finding(item) for item in findings)
        and isinstance(facts, dict)
        and all(isinstance(name, str) for name in facts)
        and isinstance(parsed, bool)
    )


def _int(value: Any) -> bool:
    return type(value) is int and value >= 0  # bool is an int subclass: not a line number


def _position(value: Any) -> bool:
    return isinstance(value, dict) and _int(value.get("row")) and _int(value.get("column"))


def _strings(item: dict, *names: str) -> bool:
    return all(isinstance(item.get(name), str) for name in names)


def _finding(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and _strings(item, "code", "name", "message")
        and item.get("severity", "warning") in _SEVERITIES
        and _position(item.get("location"))
        and _position(item.get("end_location"))
        and (item.get("fix") is None or _fix(item["fix"]))
        and isinstance(item.get("evidence", []), list)
        and all(_evidence(e) for e in item.get("evidence", []))
        and (item.get("cell") is None or (_int(item["cell"]) and item["cell"] > 0))
    )


def _fix(fix: Any) -> bool:
    return (
        isinstance(fix, dict)
        and _strings(fix, "message")
        and fix.get("applicability") in _APPLICABILITY
        and isinstance(fix.get("edits"), list)
        and all(
            isinstance(e, dict) and _strings(e, "content") and _position(e.get("location")) and _position(e.get("end_location"))
            for e in fix["edits"]
        )
    )


def _evidence(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and "status" in item
        and all(name in _EVIDENCE and isinstance(value, _EVIDENCE[name]) for name, value in item.items())
    )
