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


class Positions:
    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self._starts: dict[int, int] = {}  # id(top-level statement) -> its first line
        self._next_index = 0
        self._next_line = 1 + len(module.header)
        self._spans: dict[int, Span] = {}
        self._whole: Any = None
        self._owner: dict[int, cst.CSTNode] | None = None

    def _start_line(self, statement: cst.CSTNode) -> int | None:
        key = id(statement)
        body = self.module.body
        while key not in self._starts and self._next_index < len(body):
            current = body[self._next_index]
            self._starts[id(current)] = self._next_line
            state = _new_state(self.module)
            with _deep_recursion():
                current._codegen(state)
            self._next_line += sum(len(_NEWLINE.findall(token)) for token in state.tokens if "\n" in token or "\r" in token)
            self._next_index += 1
        return self._starts.get(key)

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
        state = _new_state(self.module, start, {id(node) for node in nodes})
        with _deep_recursion():
            statement._codegen(state)
        self._spans.update(state.results)
        return state.results.get(id(nodes[0]))

    def _statement_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The top-level statement holding `node`, for reports made after the traversal (a
        walk of the tree, ~0.1x the parse, instead of whole-file positions, ~2x)."""
        if self._owner is None:
            from torchlint.static.walker import iter_nodes

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
