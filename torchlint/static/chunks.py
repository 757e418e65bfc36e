"""Parse a file again after an edit, reusing the top-level statements that did not change.

The language server re-checks a document on every edit, and libcst parses the whole text each
time: for a 1,000-line file that is a third of a check, though a keystroke changes one
statement. So the text is cut into chunks at top-level statement boundaries, each chunk is
parsed on its own and remembered by its text, and the module is put together from the
chunks' statements. After an edit only the chunk holding it is parsed again.

The result equals `libcst.parse_module(text)` node for node (tests/test_chunks.py compares
them on real files), because the cuts are only made where the two parses must agree:

- a cut is at the start of a line that begins a top-level statement (a name or a decorator
  at column 0, outside any multi-line string, not after a backslash continuation, not an
  `else`/`elif`/`except`/`finally` clause). A chunk that still fails alone (a cut inside
  brackets, which the string scan does not track) is merged with the next one;
- blank lines and column-0 comments before such a line are the statement's `leading_lines`
  in the whole-file parse, so the cut goes before them (a chunk parsed alone makes them its
  module `header`, which is moved back onto the statement). A cut is not made after an
  indented comment (libcst may give it to the previous block's footer) nor between a
  decorator and its function;
- every chunk must agree on the module's default newline and, where it has an indented
  block, its default indentation (blocks with the default indentation store none, so a
  disagreement would change the code they generate); otherwise the whole text is parsed.

The first line of each chunk's first statement is known from the text, so positions need
not generate the code before a statement to count its lines (`starts`).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

import libcst as cst

from torchlint.static.parsing import parse_module
from torchlint.static.positions import Positions, Remembered

# A line that can start a top-level statement: a name, a keyword or a decorator at column 0.
_CANDIDATE = re.compile(r"(?:\r\n|\r|\n)(?=[A-Za-z_@])")
_CLAUSE = re.compile(r"(?:else|elif|except|finally)\b")
# Comments (which may hold quotes) and string openings, to find where multi-line strings are.
_QUOTE_OR_COMMENT = re.compile(r"""#[^\r\n]*|'''|\"\"\"|'|\"""")
_STRING_END = {
    "'''": re.compile(r"(?s)(?:[^'\\]|\\.|'(?!''))*'''"),
    '"""': re.compile(r'(?s)(?:[^"\\]|\\.|"(?!""))*"""'),
    "'": re.compile(r"(?:[^'\\\r\n]|\\(?:\r\n|[\s\S]))*'"),
    '"': re.compile(r'(?:[^"\\\r\n]|\\(?:\r\n|[\s\S]))*"'),
}
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
#: Most merges a failing chunk gets before the whole text is parsed instead.
_MAX_MERGES = 3


def _string_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each triple-quoted string, in order. An unterminated string runs to
    the end of the text (the parse will say what is wrong)."""
    spans = []
    position = 0
    while True:
        match = _QUOTE_OR_COMMENT.search(text, position)
        if match is None:
            return spans
        token = match.group()
        if token[0] == "#":
            position = match.end()
            continue
        end = _STRING_END[token].match(text, match.end())
        if end is None:
            spans.append((match.start(), len(text)))
            return spans
        if len(token) == 3:
            spans.append((match.start(), end.end()))
        position = end.end()


def _line_before(text: str, offset: int) -> tuple[int, str]:
    """The start and text (without its line end) of the line that ends just before `offset`."""
    end = offset - 2 if text.startswith("\r\n", offset - 2) else offset - 1
    start = max(text.rfind("\n", 0, end), text.rfind("\r", 0, end)) + 1
    return start, text[start:end]


def cut_points(text: str) -> list[int]:
    """Offsets where the text may be cut into separately parsed chunks (0 first)."""
    spans = _string_spans(text)
    span_starts = [start for start, _ in spans]
    cuts = [0]
    for match in _CANDIDATE.finditer(text):
        at = match.end()
        inside = bisect.bisect_right(span_starts, at) - 1
        if inside >= 0 and spans[inside][1] > at:
            continue
        if _CLAUSE.match(text, at):
            continue
        cut = at
        while cut > 0:
            start, line = _line_before(text, cut)
            if line.strip() and not line.startswith("#"):
                break
            cut = start
        if cut <= cuts[-1]:
            continue
        if line.endswith("\\") or line.startswith("@") or (line[:1] in " \t\f" and line.lstrip().startswith("#")):
            continue
        cuts.append(cut)
    return cuts


def _has_block(statement: cst.CSTNode) -> bool:
    if type(statement) is cst.SimpleStatementLine:
        return False
    stack = [statement]
    while stack:
        node = stack.pop()
        if type(node) is cst.IndentedBlock:
            return True
        if type(node) is not cst.SimpleStatementLine:
            stack.extend(node.children)
    return False


@dataclass
class _Chunk:
    module: cst.Module
    has_block: bool
    lines: int  # line breaks in the chunk's text
    #: The statements as they stand after another chunk: the module header moved onto the
    #: first one (made once, so the same nodes serve every later parse).
    _following: list[cst.CSTNode] | None = None

    def statements(self, first: bool) -> list[cst.CSTNode] | None:
        module = self.module
        if first or not module.header:
            return list(module.body)
        if self._following is None:
            if not module.body:
                return None
            lead = module.body[0]
            self._following = [lead.with_changes(leading_lines=[*module.header, *lead.leading_lines]), *module.body[1:]]
        return list(self._following)


@dataclass
class Parsed:
    module: cst.Module
    #: id(top-level statement) -> the line its code starts on (its leading lines included),
    #: for the first statement of each chunk.
    starts: dict[int, int] = field(default_factory=dict)
    #: What positions found in the statements reused from the last parse.
    remembered: Remembered | None = None

    def positions(self) -> Positions:
        return Positions(self.module, self.starts, self.remembered)


class ChunkParser:
    """`parse(text)` for successive versions of one document: keeps the chunks of the last
    parse (a document's earlier versions are not kept, so memory stays one tree)."""

    def __init__(self) -> None:
        self._chunks: dict[str, _Chunk | None] = {}  # None: does not parse alone
        self._remembered = Remembered()
        #: The last tree, kept alive so that the ids `_remembered` is keyed by stay its own.
        self._module: cst.Module | None = None

    def parse(self, text: str) -> Parsed:
        parsed = self._parse(text)
        self._module = parsed.module
        self._remembered.keep(parsed.module.body)
        parsed.remembered = self._remembered
        return parsed

    def _parse(self, text: str) -> Parsed:
        cuts = cut_points(text)
        if len(cuts) < 2:
            self._chunks = {}
            return Parsed(parse_module(text))
        kept: dict[str, _Chunk | None] = {}
        pieces: list[tuple[int, _Chunk]] = []  # (line of the chunk's first line, chunk)
        line = 1
        bounds = list(zip(cuts, cuts[1:] + [len(text)]))
        index = 0
        while index < len(bounds):
            start, end = bounds[index]
            chunk, merged = None, 0
            while True:
                piece = text[start:end]
                chunk = self._chunk(piece, kept)
                if chunk is not None or merged == _MAX_MERGES or index + 1 >= len(bounds):
                    break
                index += 1
                end = bounds[index][1]
                merged += 1
            if chunk is None:
                self._chunks = kept
                return Parsed(parse_module(text))  # the whole text's own error, or its tree
            pieces.append((line, chunk))
            line += chunk.lines
            index += 1
        self._chunks = kept
        return self._join(text, pieces)

    def _chunk(self, piece: str, kept: dict[str, _Chunk | None]) -> _Chunk | None:
        if piece in kept:
            return kept[piece]
        if piece in self._chunks:
            chunk = self._chunks[piece]
        else:
            try:
                module = parse_module(piece)
            except Exception:  # a syntax error, or a cut the scan got wrong: merge or give up
                chunk = None
            else:
                chunk = _Chunk(module, any(_has_block(s) for s in module.body), len(_LINE_BREAK.findall(piece)))
        kept[piece] = chunk
        return chunk

    @staticmethod
    def _join(text: str, pieces: list[tuple[int, _Chunk]]) -> Parsed:
        first, last = pieces[0][1].module, pieces[-1][1].module
        newline = first.default_newline
        indents = {chunk.module.default_indent for _, chunk in pieces if chunk.has_block}
        if len(indents) > 1 or any(chunk.module.default_newline != newline for _, chunk in pieces):
            return Parsed(parse_module(text))
        body: list[cst.CSTNode] = []
        starts: dict[int, int] = {}
        for number, (line, chunk) in enumerate(pieces):
            module = chunk.module
            statements = chunk.statements(number == 0)
            if statements is None or (number < len(pieces) - 1 and (module.footer or not module.has_trailing_newline)):
                return Parsed(parse_module(text))
            if statements:
                starts[id(statements[0])] = line + (len(module.header) if number == 0 else 0)
            body.extend(statements)
        module = cst.Module(
            body=body,
            header=first.header,
            footer=last.footer,
            encoding=first.encoding,
            default_indent=indents.pop() if indents else first.default_indent,
            default_newline=newline,
            has_trailing_newline=last.has_trailing_newline,
        )
        return Parsed(module, starts)
