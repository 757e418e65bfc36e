"""What every output format needs besides the findings: rule metadata, source lines,
repo-relative paths and stable fingerprints. The formats themselves are plugins
(`torchlint.plugins.formats`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchlint.config import Config
    from torchlint.findings import Finding
    from torchlint.rule import Rule


@dataclass
class ReportContext:
    config: Config
    rules: dict[str, type[Rule]] = field(default_factory=dict)
    _lines: dict[str, list[str] | None] = field(default_factory=dict)

    def source_lines(self, path: str) -> list[str] | None:
        if path not in self._lines:
            from torchlint.static.source import read_bytes

            # The same guarded read as the checker's: a FIFO reported as TL000 must not block
            # the fingerprints of SARIF, GitLab and baseline output.
            data, _ = read_bytes(Path(path))
            self._lines[path] = data.decode("utf-8", errors="replace").splitlines() if data is not None else None
        return self._lines[path]

    def snippet(self, finding: Finding) -> str:
        """The flagged lines' text with whitespace normalised: stable while code moves."""
        lines = self.source_lines(finding.path)
        if not lines:
            return ""
        start, end = finding.location.line, min(finding.location.end_line, finding.location.line + 20)
        return " ".join(" ".join(line.split()) for line in lines[start - 1 : end])

    def repo_root(self) -> Path:
        """The git work tree holding the project (what CI annotations are relative to),
        else the project root."""
        for directory in (self.config.root, *self.config.root.parents):
            if (directory / ".git").exists():
                return directory
        return self.config.root

    def relative_path(self, path: str) -> str:
        candidate = Path(path)
        try:
            return candidate.absolute().relative_to(self.repo_root()).as_posix()
        except ValueError:
            return candidate.as_posix()

    def fingerprints(self, findings: list[Finding]) -> list[str]:
        """One per finding: code + repo-relative path + normalised snippet (+ the occurrence
        number when the same snippet is flagged twice in a file), never the line number."""
        seen: dict[tuple[str, str, str], int] = {}
        out = []
        for finding in findings:
            key = (finding.code, self.relative_path(finding.path), self.snippet(finding))
            occurrence = seen.get(key, 0)
            seen[key] = occurrence + 1
            digest = hashlib.sha256("\0".join((*key, str(occurrence))).encode()).hexdigest()[:32]
            out.append(digest)
        return out
