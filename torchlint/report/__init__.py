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
    #: ANSI colour for the human formats (`--color`); off for files and pipes
    color: bool = False
    _lines: dict[str, list[str] | None] = field(default_factory=dict)
    _notebooks: dict[str, object] = field(default_factory=dict)

    def source_lines(self, path: str) -> list[str] | None:
        if path not in self._lines:
            from torchlint.static.lines import python_lines
            from torchlint.static.source import read_bytes

            # The same guarded read as the checker's: a FIFO reported as TL000 must not block
            # the fingerprints of SARIF, GitLab and baseline output.
            data, _ = read_bytes(Path(path))
            self._lines[path] = python_lines(data.decode("utf-8", errors="replace")) if data is not None else None
        return self._lines[path]

    def notebook(self, path: str):
        """The notebook at `path` (read once), or None when it is not one that can be read."""
        if path not in self._notebooks:
            from torchlint.notebook import Notebook, NotebookError
            from torchlint.static.source import read_bytes

            data, _ = read_bytes(Path(path))
            try:
                self._notebooks[path] = Notebook.parse(data) if data is not None else None
            except NotebookError:
                self._notebooks[path] = None
        return self._notebooks[path]

    def finding_lines(self, finding: Finding) -> list[str] | None:
        """The lines `finding.location` counts in: its file's, or in a notebook its cell's."""
        if finding.cell is not None:
            notebook = self.notebook(finding.path)
            return notebook.cell_lines(finding.cell) if notebook is not None else None
        return self.source_lines(finding.path)

    def file_location(self, finding: Finding):
        """Where the finding is in the file on disk. In a notebook that is a line and column
        of its JSON text, where a tool that opens the raw .ipynb (SARIF viewers, GitHub and
        GitLab annotations) must point; `notebook_label` names the cell for people."""
        loc = finding.location
        notebook = self.notebook(finding.path) if finding.cell is not None else None
        if notebook is None:
            return loc
        from torchlint.findings import Location

        line, column = notebook.file_position(finding.cell, loc.line, loc.column)
        end_line, end_column = notebook.file_position(finding.cell, loc.end_line, loc.end_column)
        if (end_line, end_column) < (line, column):
            end_line, end_column = line, column + 1
        return Location(line, column, end_line, end_column)

    @staticmethod
    def notebook_label(finding: Finding) -> str:
        """`cell 3, line 2: ` before a notebook finding's message; empty for a .py file."""
        if finding.cell is None:
            return ""
        return f"cell {finding.cell}, line {finding.location.line}: "

    def snippet(self, finding: Finding) -> str:
        """The flagged lines' text with whitespace normalised: stable while code moves."""
        lines = self.finding_lines(finding)
        if not lines:
            return ""
        start, end = finding.location.line, min(finding.location.end_line, finding.location.line + 20)
        return " ".join(" ".join(line.split()) for line in lines[start - 1 : end])

    def repo_root(self) -> Path:
        """The git work tree holding the project (what CI annotations are relative to), else
        the folder the command runs in when the project is inside it (where CI runs, as in
        `torchlint check examples/buggy_project`), else the project root."""
        for directory in (self.config.root, *self.config.root.parents):
            if (directory / ".git").exists():
                return directory
        cwd = Path.cwd()
        return cwd if self.config.root == cwd or cwd in self.config.root.parents else self.config.root

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
            # surrogateescape: a file name that is not UTF-8 (bytes the OS gave back as surrogates)
            digest = hashlib.sha256("\0".join((*key, str(occurrence))).encode("utf-8", "surrogateescape")).hexdigest()[:32]
            out.append(digest)
        return out
