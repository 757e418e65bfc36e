"""`torchlint check --add-noqa`: silence today's findings with `# noqa: TLxxx` comments, so a
project can adopt torchlint now and fix its findings later.

A comment goes on a line that can end in one: the finding's first line, else its last (a
suppression is read from either). A line that ends inside a multi-line string or with a
backslash continuation cannot take a comment; such a finding is skipped and said. Codes
merge into a `# noqa: ...` comment already on the line, other tools' codes kept, sorted and
unique. A file is written only when the result still parses and the file is still what was
read (torchlint.guarded_write).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from torchlint.findings import Finding
from torchlint.guarded_write import NotReplaced, WritePolicy, replace_unchanged
from torchlint.static.engine_rules import ALWAYS_REPORTED, UnusedSuppression
from torchlint.static.source import read_source

#: Not silenced this way: the engine failing to check (TL000-TL002) is not a finding about the
#: code, and an unused suppression (TL003) is fixed by deleting the comment, not by another.
NOT_SILENCED = ALWAYS_REPORTED | {UnusedSuppression.code}

# A code (TL301, E501) or a kebab-case rule name; words after them (a reason) are kept as written.
_SELECTOR = r"(?:[A-Za-z]+[0-9]+|[a-z0-9]+(?:-[a-z0-9]+)+)(?![\w-])"
_NOQA_CODES = re.compile(rf"#\s*noqa\s*:\s*(?P<codes>{_SELECTOR}(?:(?:\s*,\s*|\s+){_SELECTOR})*)", re.IGNORECASE)
_PHYSICAL_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


@dataclass
class NoqaOutcome:
    added: int = 0  # lines that got a new directive or new codes in theirs
    files: int = 0  # files written
    skipped: list[str] = field(default_factory=list)  # `path:line: why`, one per finding or file


@dataclass
class _Layout:
    """Where a file's lines can take a comment, and the comments already there."""

    no_comment: set[int]  # lines ending inside a string or with a backslash continuation
    comments: dict[int, tuple[int, str]]  # line -> (column, text) of its comment


def add_noqa(findings: Iterable[Finding], policy: WritePolicy = WritePolicy()) -> NoqaOutcome:
    outcome = NoqaOutcome()
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.code not in NOT_SILENCED:
            by_path.setdefault(finding.path, []).append(finding)
    for path, file_findings in sorted(by_path.items()):
        _add_to_file(Path(path), path, file_findings, outcome, policy)
    return outcome


def _add_to_file(path: Path, display: str, findings: list[Finding], outcome: NoqaOutcome, policy: WritePolicy) -> None:
    source = read_source(path)
    if source.text is None:
        outcome.skipped.append(f"{display}: cannot read the file again: {source.problem}")
        return
    layout = _layout(source.text)
    if layout is None:
        outcome.skipped.append(f"{display}: cannot tokenize the file; no noqa comments added")
        return
    lines = _PHYSICAL_LINE.findall(source.text)
    wanted: dict[int, set[str]] = {}
    for finding in sorted(findings, key=Finding.sort_key):
        line = _comment_line(finding, len(lines), layout, source.notebook)
        if line is None:
            outcome.skipped.append(
                f"{display}:{finding.location.line}: {finding.code} not silenced: its line ends inside a multi-line string or a "
                "backslash continuation, where a comment cannot go; add `# torchlint: disable-file=...` or fix it"
            )
            continue
        wanted.setdefault(line, set()).add(finding.code)
    changed = 0
    for line, codes in wanted.items():
        edited = _with_codes(lines[line - 1], codes, layout.comments.get(line))
        if edited != lines[line - 1]:
            lines[line - 1] = edited
            changed += 1
    if not changed:
        return
    text = "".join(lines)
    if not _still_parses(source.text, text):
        outcome.skipped.append(f"{display}: adding noqa comments would break the file; left unchanged")
        return
    try:
        replace_unchanged(path, source.state, source.encode(text), policy)
    except NotReplaced as exc:
        outcome.skipped.append(f"{display}: {exc}")
        return
    except ValueError as exc:  # a notebook whose cells cannot take the text back (NotebookError)
        outcome.skipped.append(f"{display}: {exc}; left unchanged")
        return
    except OSError as exc:
        outcome.skipped.append(f"{display}: cannot write the file ({exc.strerror or exc}); left unchanged")
        return
    outcome.added += changed
    outcome.files += 1


def silencing_line(text: str, finding: Finding, notebook=None) -> tuple[int, str] | None:
    """One finding's noqa, for an editor's "disable for this line" action: (line number, the
    line's new text without its line break). None when the finding is not silenced this way,
    the text does not tokenize, or neither of its lines can take a comment. With `notebook`,
    `text` is its joined code and the finding counts lines in its cell."""
    if finding.code in NOT_SILENCED:
        return None
    layout = _layout(text)
    if layout is None:
        return None
    lines = _PHYSICAL_LINE.findall(text)
    line = _comment_line(finding, len(lines), layout, notebook)
    if line is None:
        return None
    edited = _with_codes(lines[line - 1], {finding.code}, layout.comments.get(line))
    return line, edited.rstrip("\r\n")


def _comment_line(finding: Finding, count: int, layout: _Layout, notebook=None) -> int | None:
    """The finding's first line, else its last, whichever can end in a comment. In a notebook
    the finding counts lines in its cell; the text edited is the joined cells."""
    first, last = finding.location.line, finding.location.end_line
    if notebook is not None and finding.cell is not None:
        first, last = (notebook.joined_line(finding.cell, n) or 0 for n in (first, last))
    return next((n for n in (first, last) if 1 <= n <= count and n not in layout.no_comment), None)


def _layout(text: str) -> _Layout | None:
    """Read the tokens: which lines end inside a token (a triple-quoted string, an f-string)
    and where the comments are. None when the text does not tokenize."""
    # tokenize splits lines at "\n" only; CPython (and the findings' line numbers) also end a
    # line at a lone "\r". Same columns, same line numbers, once the endings are "\n".
    normalized = text.replace("\r\n", "\n").replace("\r", "\n")
    no_comment: set[int] = set()
    comments: dict[int, tuple[int, str]] = {}
    fstring_start = getattr(tokenize, "FSTRING_START", None)
    fstring_end = getattr(tokenize, "FSTRING_END", None)
    open_fstrings: list[int] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(normalized).readline):
            start, end = token.start[0], token.end[0]
            if token.type == tokenize.COMMENT:
                comments[start] = (token.start[1], token.string)
            elif token.type == fstring_start:
                open_fstrings.append(start)
            elif token.type == fstring_end and open_fstrings:
                no_comment.update(range(open_fstrings.pop(), end))
            if token.type not in (tokenize.NL, tokenize.NEWLINE) and end > start:
                no_comment.update(range(start, end))
    except (tokenize.TokenError, SyntaxError):
        return None
    for number, line in enumerate(normalized.split("\n"), start=1):
        if number not in comments and line.endswith("\\"):
            no_comment.add(number)
    return _Layout(no_comment, comments)


def _with_codes(line: str, codes: set[str], comment: tuple[int, str] | None) -> str:
    """`line` with `codes` in its `# noqa: ...` comment, or with a new one at its end."""
    body = line.rstrip("\r\n")
    ending = line[len(body):]
    if comment is not None:
        column, text = comment
        match = _NOQA_CODES.search(text)
        if match is not None:
            present = [part for part in re.split(r"[\s,]+", match.group("codes")) if part]
            merged = ", ".join(sorted(set(present) | codes))
            start = column + match.start("codes")
            return body[:start] + merged + body[column + match.end("codes"):] + ending
    return body.rstrip() + "  # noqa: " + ", ".join(sorted(codes)) + ending


def _still_parses(before: str, after: str) -> bool:
    """Whether `after` parses, when `before` did (syntax newer than this Python may not)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(before)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return True
        try:
            ast.parse(after)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    return True
