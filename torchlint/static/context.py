"""What a rule sees of the file it is checking, and what project-level checks see of all files."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, TypeVar

import libcst as cst

from torchlint.findings import Finding, Fix, Location, Severity
from torchlint.fix import SAFE, UNSAFE, NodeFix
from torchlint.fix.apply import edit_from_span
from torchlint.static.names import AliasTable, dotted_name, local_bindings

A = TypeVar("A")

if TYPE_CHECKING:
    from torchlint.config import Config
    from torchlint.rule import Rule
    from torchlint.static.positions import Positions


#: After a name: it is assigned, a parameter, a loop or comprehension variable (`x = `, `x,`, `x)`, `x:`, `x in`).
_BINDING_AFTER = re.compile(r"\s*(?:[,)\]:]|=(?!=)|\s(?:in|for)\b)")
#: Before a name: `as x`, `def x`, `class x`, `for x`, `global x`, `nonlocal x`, `*x`.
_IMPORT_LINE = re.compile(r"[ \t]*(?:import|from)\s")


@functools.lru_cache(maxsize=256)
def _occurrence(name: str) -> re.Pattern[str]:
    """`name` as a whole word, not an attribute. The pattern starts with the name itself so
    `re` scans for that literal in C, instead of trying every alternative at every position.
    Kept per name: the same few (`torch`, `nn`, `F`) are asked in every file."""
    return re.compile(rf"{re.escape(name)}(?<![.\w]{re.escape(name)})\b")


def _in_import_line(text: str, position: int) -> bool:
    """Whether `position` is on a line that starts an import. A function-local import of the
    same module binds nothing that `bindings_of` counts, so it never re-binds a name either."""
    start = max(text.rfind("\n", 0, position), text.rfind("\r", 0, position)) + 1  # a lone "\r" ends a line too
    return _IMPORT_LINE.match(text, start) is not None


_BINDING_BEFORE = re.compile(r"(?:\b(?:as|def|class|for|global|nonlocal)\s+|[*])\Z")


@dataclass
class PendingReport:
    rule: Rule
    node: cst.CSTNode
    message: str
    end_node: cst.CSTNode | None = None
    statement: cst.CSTNode | None = None  # the top-level statement holding `node`
    fix: NodeFix | None = None
    indents: tuple[str, ...] = ()  # indentation of the blocks enclosing `node`, for fix code


class FileContext:
    """Per-file state shared by every rule during the single traversal."""

    #: The codes of the rules this check runs, set by the engine; None when nobody said.
    enabled_codes: frozenset[str] | None = None

    def __init__(
        self,
        path: str,
        text: str,
        module: cst.Module,
        ancestors: list[cst.CSTNode],
        config: Config | None = None,
        positions: Positions | None = None,
    ) -> None:
        self.path = path
        #: The run's configuration: `config.target_torch`, `config.plugin_options(name)`.
        self.config = config
        self.text = text
        self.module = module
        self.aliases = AliasTable(module)
        #: The nodes from the module down to (excluding) the node being visited.
        self.ancestors = ancestors
        self.facts: dict[str, Any] = {}
        self.pending: list[PendingReport] = []
        #: Made on first use; given by a caller that knows more of the layout (the language
        #: server's chunked parse: statement lines, spans remembered from the last check).
        self._positions = positions
        self._bindings: dict[int, frozenset[str]] = {}
        self._rebindable: set[str] | None = None
        self._qualnames: dict[int, str | None] = {}
        self._enclosing_key: tuple = ()
        self._enclosing: cst.FunctionDef | None = None
        #: The file's analyses (torchlint.analysis), built by the engine before the rules.
        self.analyses: dict[type, Any] = {}
        #: Answers of the semantic model kept for this file's check (an index per scope, so a
        #: question asked at every call does not walk the scope each time).
        self.memo: dict[Any, Any] = {}

    def is_enabled(self, code: str) -> bool:
        """Whether rule `code` runs in this check: two rules that would report the same call
        use it to agree on which one does. False when the engine did not say."""
        return self.enabled_codes is not None and code in self.enabled_codes

    def analysis(self, cls: type[A]) -> A:
        """This file's instance of an analysis the calling rule names in ``Rule.analyses``."""
        try:
            return self.analyses[cls]
        except KeyError:
            raise LookupError(f"{cls.__name__} was not built for this file: name it in the rule's `analyses`") from None

    # -- names ------------------------------------------------------------------------------
    def qualname(self, node: cst.BaseExpression) -> str | None:
        """`torch.nn.functional.softmax` for `F.softmax` after `import torch.nn.functional as F`;
        None when the name is not bound by an import or a function re-binds it locally."""
        key = id(node)
        if key in self._qualnames:
            return self._qualnames[key]  # thirty rules ask about the same call
        result = self._qualnames[key] = self._resolve_qualname(node)
        return result

    def _resolve_qualname(self, node: cst.BaseExpression) -> str | None:
        dotted = dotted_name(node)
        if dotted is None:
            return None
        resolved = self.aliases.resolve(dotted)
        if resolved is None:
            return None
        head = dotted.partition(".")[0]
        if not self._maybe_rebound(head):
            return resolved
        for ancestor in self.ancestors:
            if type(ancestor) in (cst.FunctionDef, cst.Lambda) and head in self.bindings_of(ancestor):
                return None
        return resolved

    def _maybe_rebound(self, name: str) -> bool:
        """False when the text proves no function re-binds `name` (no parameter, assignment,
        loop, `as`, def or class of that name anywhere): then no scope needs scanning. Most
        files never re-bind `torch`, `nn` or `F`, and most functions use them."""
        if self._rebindable is None:
            self._rebindable = self._find_rebindable(set(self.aliases.aliases))
        return name in self._rebindable

    def _find_rebindable(self, heads: set[str]) -> set[str]:
        """The import-bound names that some statement might re-bind: followed by `,` `)` `]`
        `:` `=` `in` or `for` (a target, parameter or loop variable), or preceded by `as`,
        `def`, `class`, `for`, `global`, `nonlocal` or `*`. Over-approximate on purpose: a
        false hit only costs a scope scan."""
        text = self.text
        found: set[str] = set()
        for name in heads:
            if name not in text:
                continue
            for match in _occurrence(name).finditer(text):
                if _in_import_line(text, match.start()):
                    continue  # `import torch.nn as nn` is the binding being resolved
                if _BINDING_AFTER.match(text, match.end()) or _BINDING_BEFORE.search(text, max(0, match.start() - 40), match.start()):
                    found.add(name)
                    break
        return found

    def bindings_of(self, function: cst.FunctionDef | cst.Lambda) -> frozenset[str]:
        key = id(function)
        names = self._bindings.get(key)
        if names is None:
            names = local_bindings(function, walrus=":=" in self.text)
            self._bindings[key] = names
        return names

    # -- structure --------------------------------------------------------------------------
    # Rules ask these for nearly every call they look at. libcst's node classes are ABCs, so
    # `isinstance` goes through ABCMeta; they are also never subclassed, so comparing the
    # exact type gives the same answer at a fraction of the cost.
    def enclosing_function(self) -> cst.FunctionDef | None:
        ancestors = self.ancestors
        if not ancestors:
            return None
        # Asked by many rules for the same node: remembered for the node being visited.
        key = (len(ancestors), id(ancestors[-1]))
        if key == self._enclosing_key:
            return self._enclosing
        function_type = cst.FunctionDef
        found = None
        for ancestor in reversed(ancestors):
            if type(ancestor) is function_type:
                found = ancestor
                break
        self._enclosing_key, self._enclosing = key, found
        return found

    def enclosing_class(self) -> cst.ClassDef | None:
        """The class whose body directly holds the enclosing function (a method's class)."""
        function_type, class_type = cst.FunctionDef, cst.ClassDef
        function_seen = False
        for ancestor in reversed(self.ancestors):
            kind = type(ancestor)
            if kind is function_type:
                if function_seen:
                    return None
                function_seen = True
            elif kind is class_type:
                return ancestor
        return None

    # -- reporting --------------------------------------------------------------------------
    def report(
        self, rule: Rule, node: cst.CSTNode, message: str, *, end_node: cst.CSTNode | None = None, fix: NodeFix | None = None
    ) -> PendingReport:
        indents = ()
        if fix is not None:
            indents = tuple(
                block.indent if block.indent is not None else self.module.default_indent
                for block in self.ancestors
                if type(block) is cst.IndentedBlock
            )
        report = PendingReport(rule, node, message, end_node, self._top_statement(node), fix, indents)
        self.pending.append(report)
        return report

    def withdraw(self, report: PendingReport) -> None:
        self.pending = [item for item in self.pending if item is not report]

    def _top_statement(self, node: cst.CSTNode) -> cst.CSTNode | None:
        if len(self.ancestors) > 1:
            return self.ancestors[1]
        return node if self.ancestors else None

    def position(self, node: cst.CSTNode, statement: cst.CSTNode | None = None) -> tuple[int, int, int, int]:
        """(line, column, end_line, end_column), 1-based, end exclusive.

        `statement` (default: the top-level statement being visited) is a hint; a node outside
        it is found through the file's node-to-statement map. Either way only one statement's
        code is generated."""
        if self._positions is None:
            from torchlint.static.positions import Positions

            self._positions = Positions(self.module)
        if statement is None and len(self.ancestors) > 1:
            statement = self.ancestors[1]
        return self._positions.span(node, statement)

    def findings(self) -> list[Finding]:
        self._prepare_positions()
        out = []
        for item in self.pending:
            line, column, end_line, end_column = self.position(item.node, item.statement)
            if item.end_node is not None:
                _, _, end_line, end_column = self.position(item.end_node, item.statement)
            rule = item.rule
            out.append(
                Finding(
                    code=rule.code,
                    name=rule.name,
                    message=item.message,
                    path=self.path,
                    location=Location(line, column, end_line, end_column),
                    severity=rule.severity,
                    fix=self._safe_fix(item),
                )
            )
        return out

    def _prepare_positions(self) -> None:
        """Positions of every reported node (and every node a fix replaces), one code
        generation per statement rather than one per finding."""
        if not self.pending:
            return
        if self._positions is None:
            from torchlint.static.positions import Positions

            self._positions = Positions(self.module)
        by_statement: dict[int, tuple[cst.CSTNode, list[cst.CSTNode]]] = {}
        for item in self.pending:
            if item.statement is None:
                continue
            nodes = by_statement.setdefault(id(item.statement), (item.statement, []))[1]
            nodes.append(item.node)
            if item.end_node is not None:
                nodes.append(item.end_node)
            if item.fix is not None:
                nodes.extend(old for old, _ in item.fix.replacements)
        for statement, nodes in by_statement.values():
            self._positions.prepare(statement, nodes)

    def _code_at_depth(self, node: cst.CSTNode, indents: tuple[str, ...]) -> str:
        """Code for `node` as it will sit in the file: lines it breaks get the indentation of
        the blocks around it (module.code_for_node would generate it at column 0)."""
        from libcst._nodes.internal import CodegenState

        state = CodegenState(
            default_indent=self.module.default_indent,
            default_newline=self.module.default_newline,
            indent_tokens=list(indents),
        )
        node._codegen(state)
        return "".join(state.tokens)

    def _safe_fix(self, item: PendingReport) -> Fix | None:
        """A fix that cannot be built is dropped; the finding stands and the run goes on."""
        try:
            return self._fix(item)
        except Exception:
            return None

    def _fix(self, item: PendingReport) -> Fix | None:
        fix = item.fix
        if fix is None or fix.applicability not in (SAFE, UNSAFE):
            return None
        if item.rule.fix_safety is None or (fix.applicability == UNSAFE and item.rule.fix_safety == SAFE):
            return None  # a rule may not offer riskier fixes than it declares
        edits = []
        for old, new in fix.replacements:
            content = new if isinstance(new, str) else self._code_at_depth(_without_parentheses(new), item.indents)
            # The node's own code, generated independently of its position: the edit is
            # applied only where the file holds exactly this text.
            original = self._code_at_depth(_without_parentheses(old), item.indents)
            edits.append(edit_from_span(content, self.position(old, item.statement), original))
        return Fix(fix.message, fix.applicability, tuple(edits))


def _without_parentheses(node: cst.CSTNode) -> cst.CSTNode:
    """Positions exclude an expression's own parentheses; its generated code includes them.
    (ImportFrom's lpar is a single optional node, part of its syntax: kept.)"""
    if isinstance(getattr(node, "lpar", None), (list, tuple)) and node.lpar:
        return node.with_changes(lpar=[], rpar=[])
    return node


@dataclass
class ProjectContext:
    """What project-level checks see: every checked file's facts and module name."""

    #: display path -> facts the file's rules and plugins recorded (JSON-able).
    facts: dict[str, dict[str, Any]]
    #: display path -> dotted module name ("pkg.models"), from __init__.py files on disk.
    module_names: dict[str, str]
    enabled: frozenset[str] = field(default_factory=frozenset)
    #: enabled codes reported only where `torchlint run` proves them (`StaticEngine.proving`)
    proving: frozenset[str] = field(default_factory=frozenset)
    #: token -> the checked files whose text contains it (the rules' `project_tokens`);
    #: anything with `get(token, default)` (the engine's is worked out on demand).
    token_files: Any = field(default_factory=dict)
    #: display path -> the folder of the project it belongs to (nearest pyproject.toml,
    #: setup.py, setup.cfg, requirements.txt or .git); files without one share "".
    roots: Any = field(default_factory=dict)

    def files_mentioning(self, token: str, near: str | None = None) -> frozenset[str]:
        """Checked files whose text contains `token` (one of the enabled rules'
        `project_tokens`); with `near`, only those of the same project as that file (a
        folder of independent examples is many projects)."""
        files = self.token_files.get(token, frozenset())
        if near is None:
            return files
        root = self.roots.get(near, "")
        return frozenset(f for f in files if self.roots.get(f, "") == root)

    def files_naming(self, name: str, near: str) -> frozenset[str] | None:
        """Checked files of `near`'s project whose text holds the identifier `name`, read or
        not by any rule; None when the token index cannot tell (a bare mapping)."""
        lookup = getattr(self.token_files, "files_naming", None)
        if lookup is None:
            return None
        root = self.roots.get(near, "")
        return frozenset(f for f in lookup(name) if self.roots.get(f, "") == root)

    def count_in(self, path: str, pattern: Any) -> int | None:
        """How often the bytes pattern matches in one checked file; None when the token index
        cannot tell (a bare mapping)."""
        count = getattr(self.token_files, "count", None)
        return None if count is None else count(path, pattern)

    def resolve_module(self, importer: str, module: str, level: int = 0) -> str | None:
        """The checked file that `import module` (or `from .module`, level 1) in `importer`
        means, as Python would find it: relative to the importer's package for relative
        imports; otherwise the importer's own folder first (a script's folder is on
        sys.path), then a unique match in its project. None when unknown or ambiguous."""
        importer_dir = PurePosixPath(importer).parent
        if level:
            package = self.module_names.get(importer, "").split(".")
            if PurePosixPath(importer).name != "__init__.py":
                package = package[:-1]  # a module's package is its parent; a package's is itself
            if level > 1:
                package = package[: len(package) - (level - 1)]
            target = ".".join([*package, module] if module else package)
            matches = [p for p, m in self.module_names.items() if m == target]
        else:
            target = module
            matches = [p for p, m in self.module_names.items() if m == target]
            local = [p for p in matches if PurePosixPath(p).parent == importer_dir and "." not in target]
            if local:
                matches = local
        # A module of another project (an example beside this one, a nested package with its
        # own pyproject.toml) is not what this file imports; and keeping to its own project
        # keeps the answer the same whichever projects a check was given.
        root = self.roots.get(importer, "")
        matches = [p for p in matches if self.roots.get(p, "") == root]
        if len(matches) == 1:
            return matches[0]
        nearby = [p for p in matches if PurePosixPath(p).parent == importer_dir]
        return nearby[0] if len(nearby) == 1 else None


def make_finding(rule: type[Rule], path: str, span: list[int] | tuple[int, ...], message: str, severity: Severity | None = None) -> Finding:
    line, column, end_line, end_column = span
    return Finding(
        code=rule.code,
        name=rule.name,
        message=message,
        path=path,
        location=Location(line, column, end_line, end_column),
        severity=severity or rule.severity,
    )
