"""Positions for the few nodes that are reported, without resolving them for the whole file.

libcst's PositionProvider runs a position-tracking code generation over the entire module
(2x the parse). A finding needs the position of one node, so: count the lines of the
top-level statements before the one holding it (plain code generation, which libcst
round-trips exactly), then run the position-tracking generator over that one statement.
"""

from __future__ import annotations

import sys
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState


class _Sink:
    """Stands in for the provider object that libcst's codegen state writes into."""

    def __init__(self) -> None:
        self._computed: dict[cst.CSTNode, Any] = {}


class Positions:
    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self._starts: dict[int, int] = {}  # id(top-level statement) -> its first line
        self._next_index = 0
        self._next_line = 1 + len(module.header)
        self._by_statement: dict[int, dict[cst.CSTNode, Any]] = {}
        self._whole: Any = None

    def _start_line(self, statement: cst.CSTNode) -> int | None:
        key = id(statement)
        body = self.module.body
        while key not in self._starts and self._next_index < len(body):
            current = body[self._next_index]
            self._starts[id(current)] = self._next_line
            with _deep_recursion():
                self._next_line += self.module.code_for_node(current).count("\n")
            self._next_index += 1
        return self._starts.get(key)

    def span(self, node: cst.CSTNode, statement: cst.CSTNode | None) -> tuple[int, int, int, int]:
        """(line, column, end_line, end_column), 1-based, end exclusive."""
        code_range = None
        if statement is not None:
            code_range = self._statement_ranges(statement).get(node)
        if code_range is None:
            code_range = self._whole_module()[node]
        return (code_range.start.line, code_range.start.column + 1, code_range.end.line, code_range.end.column + 1)

    def _statement_ranges(self, statement: cst.CSTNode) -> dict[cst.CSTNode, Any]:
        ranges = self._by_statement.get(id(statement))
        if ranges is None:
            start = self._start_line(statement)
            if start is None:
                return {}
            sink = _Sink()
            state = PositionProvidingCodegenState(
                default_indent=self.module.default_indent,
                default_newline=self.module.default_newline,
                provider=sink,
            )
            state.line = start
            with _deep_recursion():
                statement._codegen(state)
            ranges = self._by_statement[id(statement)] = sink._computed
        return ranges

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
