"""Adopt torchlint in a legacy codebase: record today's findings, report only new ones.

An entry is (code, repo-relative path, hash of the normalised flagged source) with a count,
never a line number: lines drift as code is edited above a finding, the flagged text does
not. Entries that match nothing any more are stale (the code was fixed or deleted) and are
reported so the baseline shrinks over time.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from torchlint.atomic import write_atomic
from torchlint.bounded_read import Unreadable, load_json
from torchlint.config import ConfigError
from torchlint.findings import Finding
from torchlint.report import ReportContext

FORMAT_VERSION = 1


def _key(finding: Finding, ctx: ReportContext) -> tuple[str, str, str]:
    snippet_hash = hashlib.sha256(ctx.snippet(finding).encode()).hexdigest()[:24]
    return (finding.code, ctx.relative_path(finding.path), snippet_hash)


def write_baseline(path: Path, findings: list[Finding], ctx: ReportContext) -> int:
    counts = Counter(_key(f, ctx) for f in findings)
    examples = {}
    for finding in findings:
        examples.setdefault(_key(finding, ctx), finding.message)
    entries = [
        {"code": code, "path": rel, "snippet_hash": digest, "count": count, "message": examples[(code, rel, digest)]}
        for (code, rel, digest), count in sorted(counts.items())
    ]
    document = {"tool": "torchlint", "version": FORMAT_VERSION, "entries": entries}
    write_atomic(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return len(findings)


#: A baseline of 100,000 findings is some 20 MB.
MAX_BASELINE_BYTES = 256 * 1024 * 1024


@dataclass
class BaselineResult:
    kept: list[Finding]
    suppressed: int
    stale: list[dict]


class Baseline:
    def __init__(self, entries: list[dict]) -> None:
        self.entries = entries

    @classmethod
    def load(cls, path: Path) -> Baseline:
        if not os.path.lexists(path):
            raise ConfigError(f"{path}: baseline file not found (create it with --write-baseline)")
        try:
            document = load_json(path, MAX_BASELINE_BYTES)
            entries = document["entries"]
            for entry in entries:
                entry["count"] = int(entry["count"])
                for key in ("code", "path", "snippet_hash"):
                    if not isinstance(entry[key], str):
                        raise TypeError(key)
        except Unreadable as exc:
            raise ConfigError(f"{path}: not a torchlint baseline ({exc.reason}; a baseline is what --write-baseline writes)") from exc
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{path}: not a torchlint baseline ({type(exc).__name__}: {exc})") from exc
        return cls(entries)

    def apply(self, findings: list[Finding], ctx: ReportContext, checked_paths: set[str]) -> BaselineResult:
        remaining = Counter()
        for entry in self.entries:
            remaining[(entry["code"], entry["path"], entry["snippet_hash"])] += entry["count"]
        kept, suppressed = [], 0
        for finding in findings:
            key = _key(finding, ctx)
            if remaining[key] > 0:
                remaining[key] -= 1
                suppressed += 1
            else:
                kept.append(finding)
        checked = {ctx.relative_path(p) for p in checked_paths}
        root = ctx.repo_root()
        stale = [
            {"code": code, "path": rel, "snippet_hash": digest, "count": count}
            for (code, rel, digest), count in sorted(remaining.items())
            if count > 0 and (rel in checked or not (root / rel).exists())
        ]
        return BaselineResult(kept, suppressed, stale)
