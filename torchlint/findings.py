"""Plain data that flows from rules to formatters: JSON round-trippable, no behaviour."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, order=True)
class Location:
    """1-based line and column (columns count Unicode code points); the end is exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class Edit:
    """Replace the text between two locations (1-based, end exclusive) with `content`.

    `original` is the text the edit was made for; an edit whose span no longer holds it is
    not applied (the file changed, or the coordinates are wrong). It is not serialised:
    `--fix` derives its fixes afresh from the file it edits, never from JSON."""

    content: str
    line: int
    column: int
    end_line: int
    end_column: int
    original: str | None = None


@dataclass(frozen=True)
class Fix:
    message: str
    applicability: str  # "safe" or "unsafe"
    edits: tuple[Edit, ...] = ()


@dataclass(frozen=True)
class Evidence:
    """What a runtime probe saw; attached to a static finding or standing alone."""

    status: str  # "confirmed", "not reproduced", "not reached"
    detail: str = ""
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    message: str
    path: str
    location: Location
    severity: Severity = Severity.WARNING
    fix: Fix | None = None
    evidence: tuple[Evidence, ...] = ()
    #: In a Jupyter notebook: the 1-based cell (as listed in the file, markdown included);
    #: `location` then counts lines within that cell. None in a .py file.
    cell: int | None = None

    def sort_key(self) -> tuple:
        loc = self.location
        return (self.path, self.cell or 0, loc.line, loc.column, self.code, loc.end_line, loc.end_column, self.message)

    def to_json(self) -> dict[str, Any]:
        """The ruff-style object used by `--output-format json`; `cell` only for a notebook."""
        loc = self.location
        data = {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "severity": self.severity.value,
            "filename": self.path,
            "location": {"row": loc.line, "column": loc.column},
            "end_location": {"row": loc.end_line, "column": loc.end_column},
            "fix": _fix_to_json(self.fix),
            "evidence": [asdict(e) for e in self.evidence],
        }
        if self.cell is not None:
            data["cell"] = self.cell
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        fix = data.get("fix")
        return cls(
            code=data["code"],
            name=data["name"],
            message=data["message"],
            path=data["filename"],
            location=Location(
                data["location"]["row"],
                data["location"]["column"],
                data["end_location"]["row"],
                data["end_location"]["column"],
            ),
            severity=Severity(data.get("severity", "warning")),
            fix=None
            if fix is None
            else Fix(
                message=fix["message"],
                applicability=fix["applicability"],
                edits=tuple(
                    Edit(
                        e["content"],
                        e["location"]["row"],
                        e["location"]["column"],
                        e["end_location"]["row"],
                        e["end_location"]["column"],
                    )
                    for e in fix["edits"]
                ),
            ),
            evidence=tuple(Evidence(**e) for e in data.get("evidence", ())),
            cell=data.get("cell"),
        )


def _fix_to_json(fix: Fix | None) -> dict[str, Any] | None:
    if fix is None:
        return None
    return {
        "message": fix.message,
        "applicability": fix.applicability,
        "edits": [
            {
                "content": e.content,
                "location": {"row": e.line, "column": e.column},
                "end_location": {"row": e.end_line, "column": e.end_column},
            }
            for e in fix.edits
        ],
    }
