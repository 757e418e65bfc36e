"""Mask IPython's non-Python lines in a notebook cell, keeping the cell's line count.

IPython runs lines Python cannot parse: line magics (`%matplotlib inline`), shell escapes
(`!pip install ...`, `files = !ls`), help (`model?`, `??torch.load`), autocall escapes
(`/f x`, `,f a b`, `;f a b`) and cell magics (`%%time`, `%%bash`). Each such line becomes a
placeholder of one line (`pass  # ...` at the line's own indentation, so a magic that is
the only statement of a block keeps the block valid), so cell line N is joined line
start + N - 1 and every position maps back one to one.

`%time stmt` and `%timeit stmt` run `stmt` in the user's namespace: the magic prefix becomes
`pass;` padded to the same width, so `stmt` keeps its columns and is checked (a training
step timed with `%time` still feeds the cross-cell dataflow). A cell under `%%time`,
`%%timeit`, `%%capture`, `%%prun` or `%%debug` is Python below its first line; any other cell
magic (`%%bash`, `%%writefile`, `%%html`, ...) makes the cell not Python at all.

Only a line that starts a statement can be a magic: a `%` or `!` that continues an open
bracket, a backslash continuation or a triple-quoted string is Python (`a\\n  % b`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from torchlint.static.lines import LINE_BREAK

#: Cell magics whose body is Python run in the notebook's own namespace.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
PLACEHOLDER = "pass  # IPython magic, masked"

_LINE_END = LINE_BREAK
_HELP = re.compile(r"^(?:\?{1,2}[\w.*\[\]]+|[\w.*\[\]]+\?{1,2})\s*$")
_ASSIGNED = re.compile(r"^[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[%!]")
# `%time`/`%timeit` and the options timeit takes before the statement (-n 10 -r 3 -q ...).
_TIMED = re.compile(r"^%(?:time|timeit(?:\s+-(?:[nrp]\s*\d+|[tcqo]))*)\s+(?=\S)")
_CELL_MAGIC = re.compile(r"^\s*%%(?P<name>\w+)")


@dataclass(frozen=True)
class Mask:
    """One masked line: `original` (without its line end) became `placeholder`. A `prefix`
    mask replaced only the start of the line (`%time ` -> `pass; `); the rest is Python."""

    index: int  # 0-based line in the cell
    original: str
    placeholder: str
    prefix: bool = False


@dataclass
class MaskedCell:
    lines: list[str]  # with their line ends, same count as the cell's
    masks: list[Mask] = field(default_factory=list)
    python: bool = True  # False: a `%%bash`-like cell, not Python at all
    #: IPython removes the first line's indentation from every line that has it (a cell
    #: pasted from inside a function runs); those lines are checked without it.
    indent: str = ""
    dedented: frozenset[int] = frozenset()

    @property
    def text(self) -> str:
        return "".join(self.lines)


def split_lines(text: str) -> list[str]:
    """Lines with their ends, split where Python and libcst end a line (`\\r\\n`, `\\r`, `\\n`)."""
    lines, start = [], 0
    for match in _LINE_END.finditer(text):
        lines.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def _body(line: str) -> tuple[str, str]:
    end = len(line.rstrip("\r\n"))
    return line[:end], line[end:]


def mask_cell(text: str) -> MaskedCell:
    lines = split_lines(text)
    cell = MaskedCell(list(lines))
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    start = 0
    if first is not None:
        indent = lines[first][: len(lines[first]) - len(lines[first].lstrip(" \t"))]
        if indent:
            cell.indent = indent
            cell.dedented = frozenset(i for i, line in enumerate(lines) if line.startswith(indent))
            cell.lines = lines = [line[len(indent):] if i in cell.dedented else line for i, line in enumerate(lines)]
        magic = _CELL_MAGIC.match(lines[first])
        if magic is not None:
            if magic.group("name") not in PYTHON_CELL_MAGICS:
                cell.python = False
                return cell
            _mask_whole(cell, first, "")
            start = first + 1
    scanner = _StatementScanner()
    index = start
    while index < len(lines):
        body, _ = _body(lines[index])
        if scanner.at_statement_start():
            stripped = body.lstrip()
            indent = body[: len(body) - len(stripped)]
            if _is_magic(stripped):
                index = _mask_magic(cell, index, indent, stripped)
                continue
        scanner.feed(body)
        index += 1
    return cell


def _is_magic(stripped: str) -> bool:
    if not stripped:
        return False
    if stripped[0] in "%!/;,":
        return not stripped.startswith("%=")  # never Python either way; `%=` is not a magic
    return bool(_HELP.match(stripped) or _ASSIGNED.match(stripped))


def _mask_magic(cell: MaskedCell, index: int, indent: str, stripped: str) -> int:
    """Mask the magic starting at `index` (with its backslash continuations); the next line."""
    timed = _TIMED.match(stripped)
    if timed is not None and not stripped.rstrip().endswith("\\") and _simple_statement(stripped[timed.end() :]):
        width = timed.end()
        prefix = "pass;".ljust(width)
        body, end = _body(cell.lines[index])
        cell.masks.append(Mask(index, indent + stripped[:width], indent + prefix, prefix=True))
        cell.lines[index] = indent + prefix + stripped[width:] + end
        return index + 1
    while True:
        body = _mask_whole(cell, index, indent)
        index += 1
        if not body.rstrip().endswith("\\") or index >= len(cell.lines):
            return index


def _mask_whole(cell: MaskedCell, index: int, indent: str) -> str:
    body, end = _body(cell.lines[index])
    placeholder = indent + PLACEHOLDER
    cell.masks.append(Mask(index, body, placeholder))
    cell.lines[index] = placeholder + end
    return body


def _simple_statement(code: str) -> bool:
    """`code` is one simple statement (`%time for ...:` cannot keep its columns as `pass; for`)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    simple = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Delete, ast.Pass,
              ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Assert, ast.Raise)
    return bool(tree.body) and all(isinstance(node, simple) for node in tree.body)


class _StatementScanner:
    """Just enough of Python's tokenizer to know whether the next line starts a statement:
    open brackets, strings (a triple-quoted one spans lines) and backslash continuations."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote: str | None = None
        self.continued = False

    def at_statement_start(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.continued

    def feed(self, line: str) -> None:
        i, n = 0, len(line)
        commented = False
        while i < n:
            char = line[i]
            if self.quote is not None:
                if char == "\\":
                    i += 2
                    continue
                if line.startswith(self.quote, i):
                    i += len(self.quote)
                    self.quote = None
                    continue
                i += 1
                continue
            if char == "#":
                commented = True
                break
            if char in "'\"":
                triple = line[i : i + 3]
                self.quote = triple if triple in ("'''", '"""') else char
                i += len(self.quote)
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            i += 1
        ends_in_backslash = not commented and line.endswith("\\")
        if self.quote is not None and len(self.quote) == 1 and not ends_in_backslash:
            self.quote = None  # an unterminated one-line string: Python's error, not ours
        self.continued = ends_in_backslash and self.quote is None


def restore_cell(masked_text: str, masks: list[Mask]) -> str | None:
    """The cell text with each placeholder put back to its magic, in order; None when a
    placeholder went missing (a fix rewrote it), since the magic cannot be put back then."""
    lines = split_lines(masked_text)
    pending = list(masks)
    out = []
    for line in lines:
        body, end = _body(line)
        if pending:
            mask = pending[0]
            if (mask.prefix and body.startswith(mask.placeholder)) or (not mask.prefix and body == mask.placeholder):
                line = mask.original + body[len(mask.placeholder) :] + end
                pending.pop(0)
        out.append(line)
    return None if pending else "".join(out)
