"""Positions for the few nodes that are reported, without resolving them for the whole file.

libcst's PositionProvider runs a position-tracking code generation over the entire module
(2x the parse), entering a context manager and splitting every token for every node. A
finding needs the position of one node, so: count the lines of the top-level statements
before the one holding it, then generate that one statement with a code generation state
that only tracks the wanted nodes and derives their line and column from the tokens
emitted so far. libcst round-trips code exactly, so the positions equal its provider's
(tests/test_positions.py checks every node of several tricky files).
"""

from __future__ import annotations

import re
import sys
from typing import Any

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import MetadataWrapper, PositionProvider

_NEWLINE = re.compile(r"\r\n?|\n")
Span = tuple[tuple[int, int], tuple[int, int]]  # ((line, column), (end_line, end_column)), column 0-based


class _NullContext:
    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


_NULL = _NullContext()


class _Recorder:
    __slots__ = ("state", "key", "start_node", "end_node", "start")

    def __init__(self, state: _TrackingState, key: int, start_node: Any, end_node: Any) -> None:
        self.state, self.key, self.start_node, self.end_node = state, key, start_node, end_node

    def __enter__(self) -> None:
        self.start = self.state.here()

    def __exit__(self, *exc: object) -> bool:
        results = self.state.results
        start = results[id(self.start_node)][0] if self.start_node is not None else self.start
        end = results[id(self.end_node)][1] if self.end_node is not None else self.state.here()
        results[self.key] = (start, end)
        return False


class _TrackingState(CodegenState):
    """libcst's code generation state, tracking positions of `wanted` nodes only."""

    def setup(self, line: int, wanted: set[int]) -> None:
        self.wanted = wanted
        self.results: dict[int, Span] = {}
        self._open: dict[int, tuple[int, int]] = {}
        self._seen = 0
        self._line = line
        self._column = 0

    def here(self) -> tuple[int, int]:
        tokens = self.tokens
        for index in range(self._seen, len(tokens)):
            token = tokens[index]
            if "\n" in token or "\r" in token:
                parts = _NEWLINE.split(token)
                self._line += len(parts) - 1
                self._column = len(parts[-1])
            else:
                self._column += len(token)
        self._seen = len(tokens)
        return (self._line, self._column)

    # Nodes that never record a syntactic position get their whitespace-inclusive range, as in
    # libcst's provider (which fills those in from before/after_codegen).
    def before_codegen(self, node) -> None:  # type: ignore[override]
        if id(node) in self.wanted:
            self._open[id(node)] = self.here()

    def after_codegen(self, node) -> None:  # type: ignore[override]
        key = id(node)
        if key in self._open:
            start = self._open.pop(key)
            self.results.setdefault(key, (start, self.here()))

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):  # type: ignore[override]
        key = id(node)
        if key not in self.wanted:
            return _NULL
        for inner in (start_node, end_node):
            if inner is not None:
                self.wanted.add(id(inner))
        return _Recorder(self, key, start_node, end_node)


def _new_state(module: cst.Module, line: int = 1, wanted: set[int] | None = None) -> _TrackingState:
    state = _TrackingState(default_indent=module.default_indent, default_newline=module.default_newline)
    state.setup(line, wanted if wanted is not None else set())
    return state


class Remembered:
    """What positions learned about top-level statements, for the next check of a file whose
    statements are the same objects (the language server's chunked parse reuses unchanged
    ones, torchlint/static/chunks.py): spans relative to the statement's first line, and the
    nodes each statement holds. Keyed by id, so the owner must keep every statement it has
    entries for alive, and drop the others with `keep`."""

    def __init__(self) -> None:
        self.spans: dict[int, dict[int, Span | None]] = {}  # None: not inside that statement
        self.nodes: dict[int, frozenset[int]] = {}

    def keep(self, statements: Any) -> None:
        alive = {id(statement) for statement in statements}
        for table in (self.spans, self.nodes):
            for key in [key for key in table if key not in alive]:
                del table[key]


class Positions:
    def __init__(self, module: cst.Module, starts: dict[int, int] | None = None, remembered: Remembered | None = None) -> None:
        """`starts`: the first line of some top-level statements, by id, already known (the
        chunked parse knows them from the text); the others are counted by generating the
        code of the statements before them, from the nearest known one. `remembered`: what
        earlier checks of the same statements found."""
        self.module = module
        self._starts: dict[int, int] = dict(starts or {})  # id(top-level statement) -> its first line
        self._index: dict[int, int] | None = None
        self._spans: dict[int, Span] = {}
        self._whole: Any = None
        self._owner: dict[int, cst.CSTNode] | None = None
        self._remembered = remembered

    def _start_line(self, statement: cst.CSTNode) -> int | None:
        key = id(statement)
        found = self._starts.get(key)
        if found is not None:
            return found
        if self._index is None:
            self._index = {id(s): i for i, s in enumerate(self.module.body)}
        target = self._index.get(key)
        if target is None:
            return None
        body = self.module.body
        index = target
        while index > 0 and id(body[index]) not in self._starts:
            index -= 1
        line = self._starts.get(id(body[index]), 1 + len(self.module.header))
        while index < target:
            state = _new_state(self.module)
            with _deep_recursion():
                body[index]._codegen(state)
            line += sum(len(_NEWLINE.findall(token)) for token in state.tokens if "\n" in token or "\r" in token)
            index += 1
            self._starts[id(body[index])] = line
        self._starts[key] = line
        return line

    def span(self, node: cst.CSTNode, statement: cst.CSTNode | None) -> tuple[int, int, int, int]:
        """(line, column, end_line, end_column), 1-based, end exclusive."""
        found = self._spans.get(id(node))
        if found is None and statement is not None:
            found = self._track(statement, (node,))  # the caller's hint: usually the right one
        if found is None:
            owner = self._statement_of(node)
            if owner is not None and owner is not statement:
                found = self._track(owner, (node,))
        if found is None:
            code_range = self._whole_module()[node]
            found = ((code_range.start.line, code_range.start.column), (code_range.end.line, code_range.end.column))
        (line, column), (end_line, end_column) = found
        return (line, column + 1, end_line, end_column + 1)

    def prepare(self, statement: cst.CSTNode, nodes: list[cst.CSTNode]) -> None:
        """Find the spans of all of `nodes` (reported in `statement`) in one code generation
        of it: a 10,000-link `.cuda()` chain with a finding per link would otherwise generate
        the whole statement once per finding."""
        missing = [node for node in nodes if id(node) not in self._spans]
        if missing:
            self._track(statement, missing)

    def _track(self, statement: cst.CSTNode, nodes: Any) -> Span | None:
        """Spans of `nodes` inside `statement`; returns the first node's."""
        start = self._start_line(statement)
        if start is None:
            return None
        known: dict[int, Span | None] = {}
        if self._remembered is not None:
            known = self._remembered.spans.setdefault(id(statement), {})
        keys = [id(node) for node in nodes]
        missing = [key for key in keys if key not in known]
        if missing:
            # Lines counted from 0 at the statement's first line: the same statement at
            # another place in a later version of the file has the same relative spans.
            state = _new_state(self.module, 0, set(missing))
            with _deep_recursion():
                statement._codegen(state)
            known.update(state.results)
            for key in missing:
                known.setdefault(key, None)
        for key in keys:
            relative = known[key]
            if relative is not None:
                (line, column), (end_line, end_column) = relative
                self._spans[key] = ((line + start, column), (end_line + start, end_column))
        return self._spans.get(keys[0]) if known[keys[0]] is not None else None

    def _statement_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The top-level statement holding `node`, for reports made after the traversal (a
        walk of the tree, ~0.1x the parse, instead of whole-file positions, ~2x)."""
        from torchlint.static.walker import iter_nodes

        remembered = self._remembered
        if remembered is not None:
            # Statement by statement, each walked once for as long as it is reused.
            key = id(node)
            for statement in self.module.body:
                inside = remembered.nodes.get(id(statement))
                if inside is None:
                    inside = remembered.nodes[id(statement)] = frozenset(id(inner) for inner in iter_nodes(statement))
                if key in inside:
                    return statement
            return None
        if self._owner is None:
            self._owner = {}
            for statement in self.module.body:
                for inner in iter_nodes(statement):
                    self._owner[id(inner)] = statement
        return self._owner.get(id(node))

    def _whole_module(self) -> Any:
        if self._whole is None:
            wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
            with _deep_recursion():
                self._whole = wrapper.resolve(PositionProvider)
        return self._whole


class _deep_recursion:
    """libcst generates code recursively; a 3,000-term `a + b + ...` chain is that deep."""

    def __enter__(self) -> None:
        self.limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(self.limit, 50_000))

    def __exit__(self, *exc: object) -> None:
        sys.setrecursionlimit(self.limit)
