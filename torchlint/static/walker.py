"""One traversal of a libcst tree that dispatches every node to every subscribed rule.

libcst's own ``CSTNode.visit`` rebuilds each node as it leaves it (it is shared with the
transformer machinery), and ``node.children`` is computed by a visitor too. Linting only
reads the tree, so we walk the dataclass fields directly, skipping the whitespace and
parenthesis fields that can never hold code. The walk is iterative: a 5,000-term
expression must not hit Python's recursion limit.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Callable, Iterable, Iterator

import libcst as cst

_SKIPPED_FIELD_PREFIXES = (
    "whitespace", "lpar", "rpar", "leading_lines", "lines_after_decorators", "header", "footer",
    "comma", "semicolon", "trailing_whitespace", "newline", "equal", "colon", "dot", "first_line",
    "empty_lines", "lines_after", "default_indent", "default_newline", "encoding", "indent", "prefix",
    "quote", "string", "raw",
)

_FIELDS: dict[type, tuple[str, ...]] = {}
_NODE_TYPES: frozenset[type] = frozenset()


def _node_types() -> frozenset[type]:
    """Every concrete libcst node class. `type(x) in` this set is a hash lookup, where
    `isinstance(x, cst.CSTNode)` goes through ABC machinery (the walk's hottest line)."""
    global _NODE_TYPES
    if not _NODE_TYPES:
        found: set[type] = set()
        stack = [cst.CSTNode]
        while stack:
            cls = stack.pop()
            found.add(cls)
            stack.extend(cls.__subclasses__())
        _NODE_TYPES = frozenset(found)
    return _NODE_TYPES


def _child_fields(cls: type) -> tuple[str, ...]:
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = tuple(
            f.name
            for f in dataclasses.fields(cls)
            if not f.name.startswith(_SKIPPED_FIELD_PREFIXES)
        )
        _FIELDS[cls] = fields
    return fields


_LEAVES: dict[type, bool] = {}
_SCALARS = (str, int, bool, type(None))


def _is_leaf(cls: type) -> bool:
    """No field of `cls` (besides the skipped ones) can hold a node: Name, Integer, the
    operators. A leaf nobody listens to is never pushed on the walk's stack."""
    leaf = _LEAVES.get(cls)
    if leaf is None:
        try:
            hints = typing.get_type_hints(cls)
            leaf = all(
                hints.get(name) in _SCALARS or hints.get(name) == typing.Optional[str] for name in _child_fields(cls)
            )
        except Exception:  # an annotation that does not resolve: walk it like any node
            leaf = False
        _LEAVES[cls] = leaf
    return leaf


Handler = Callable[[Any], object]  # not cst.CSTNode: module import must not load libcst

_DEFINES: dict[tuple[type, str], bool] = {}


def _defines(cls: type, name: str) -> bool:
    """Whether a rule or analysis class has a `visit_X`/`leave_X` handler (asked per file for
    every class of node it meets; the answer is the class's, so it is kept)."""
    key = (cls, name)
    found = _DEFINES.get(key)
    if found is None:
        found = _DEFINES[key] = hasattr(cls, name)
    return found


class Dispatcher:
    """Routes ``visit_<Type>`` / ``leave_<Type>`` of many rules; keeps the ancestor stack."""

    def __init__(
        self,
        handlers_from: Iterable[object],
        on_error: Callable[[object, BaseException, cst.CSTNode], None],
        ancestors: list[cst.CSTNode] | None = None,
    ) -> None:
        self._targets = list(handlers_from)
        self._visit: dict[type, list[tuple[object, Handler]]] = {}
        self._leave: dict[type, list[tuple[object, Handler]]] = {}
        #: node types whose nodes the walk need not enter: leaves with no handler. (Removing
        #: a target only removes handlers, so a type once skippable stays so.)
        self._silent: dict[type, bool] = {}
        self._on_error = on_error
        self.ancestors: list[cst.CSTNode] = ancestors if ancestors is not None else []

    def _handlers(self, table: dict, prefix: str, cls: type) -> list[tuple[object, Handler]]:
        handlers = table.get(cls)
        if handlers is None:
            name = prefix + cls.__name__
            handlers = [(t, getattr(t, name)) for t in self._targets if _defines(type(t), name)]
            table[cls] = handlers
        return handlers

    def _disable(self, target: object, exc: BaseException, node: cst.CSTNode) -> None:
        """One broken rule must not stop the others or the run: report it, drop its handlers."""
        self.remove(target)
        self._on_error(target, exc, node)

    def remove(self, target: object) -> None:
        """Stop dispatching to `target` (from the next node on)."""
        self._targets = [t for t in self._targets if t is not target]
        self._visit.clear()
        self._leave.clear()

    def is_active(self, target: object) -> bool:
        return any(t is target for t in self._targets)

    def _is_silent(self, cls: type) -> bool:
        silent = self._silent.get(cls)
        if silent is None:
            silent = _is_leaf(cls) and not self._handlers(self._visit, "visit_", cls) and not self._handlers(self._leave, "leave_", cls)
            self._silent[cls] = silent
        return silent

    def walk(self, root: cst.CSTNode) -> None:
        # The hottest loop of a run (once per node of every parsed file), written for speed:
        # a leave is a sentinel on the stack (its node is the top of `ancestors`), children
        # are collected inline, handlers are called inline.
        node_types = _node_types()
        silent = self._silent
        ancestors = self.ancestors
        visit_table, leave_table = self._visit, self._leave
        leave_marker = _LEAVE
        stack: list[object] = [root]
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            if node is leave_marker:
                node = ancestors.pop()
                cls = type(node)
                handlers = leave_table.get(cls)
                if handlers is None:
                    handlers = self._handlers(leave_table, "leave_", cls)
                for target, handler in handlers:
                    try:
                        handler(node)
                    except Exception as exc:
                        self._disable(target, exc, node)
                continue
            cls = type(node)
            handlers = visit_table.get(cls)
            if handlers is None:
                handlers = self._handlers(visit_table, "visit_", cls)
            for target, handler in handlers:
                try:
                    handler(node)
                except Exception as exc:
                    self._disable(target, exc, node)
            ancestors.append(node)
            push(leave_marker)
            fields = _FIELDS.get(cls) or _child_fields(cls)
            children: list[cst.CSTNode] = []
            for name in fields:
                value = getattr(node, name)
                kind = type(value)
                if kind in node_types:
                    quiet = silent.get(kind)
                    if quiet is None:
                        quiet = self._is_silent(kind)
                    if not quiet:
                        children.append(value)
                elif kind is tuple or kind is list:
                    for item in value:
                        kind = type(item)
                        if kind in node_types:
                            quiet = silent.get(kind)
                            if quiet is None:
                                quiet = self._is_silent(kind)
                            if not quiet:
                                children.append(item)
            children.reverse()
            stack.extend(children)


    def walk_module(self, module: cst.Module, before_statement: Callable[[], None] | None = None) -> None:
        """`walk(module)`, calling `before_statement()` before each top-level statement: a
        caller that may give up on the file (the language server, when the text changed
        again) raises from it, and the walk stops there."""
        if before_statement is None:
            self.walk(module)
            return
        self._dispatch(self._visit, "visit_", module)
        self.ancestors.append(module)
        try:
            for statement in module.body:
                before_statement()
                self.walk(statement)
        finally:
            self.ancestors.pop()
        self._dispatch(self._leave, "leave_", module)

    def _dispatch(self, table: dict, prefix: str, node: cst.CSTNode) -> None:
        for target, handler in self._handlers(table, prefix, type(node)):
            try:
                handler(node)
            except Exception as exc:
                self._disable(target, exc, node)


_LEAVE = object()


_SKIP_TYPES: dict[tuple[type, ...], frozenset[type]] = {}


def iter_nodes(root: cst.CSTNode, *, skip: tuple[type, ...] = ()) -> Iterator[cst.CSTNode]:
    """Every node under `root` (root included) in source order, without libcst's visitor
    machinery (which rebuilds each node and costs ~20x more). Subtrees of `skip` types
    below the root are yielded but not entered — e.g. nested functions."""
    node_types = _node_types()
    skip_types = _SKIP_TYPES.get(skip)
    if skip_types is None:
        skip_types = _SKIP_TYPES[skip] = frozenset(t for t in node_types if issubclass(t, skip)) if skip else frozenset()
    stack: list[cst.CSTNode] = [root]
    pop, extend = stack.pop, stack.extend
    while stack:
        node = pop()
        yield node
        cls = type(node)
        if cls in skip_types and node is not root:
            continue
        children: list[cst.CSTNode] = []
        for name in _FIELDS.get(cls) or _child_fields(cls):
            value = getattr(node, name)
            kind = type(value)
            if kind in node_types:
                children.append(value)
            elif kind is tuple or kind is list:
                for item in value:
                    if type(item) in node_types:
                        children.append(item)
        children.reverse()
        extend(children)
