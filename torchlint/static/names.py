"""Qualified names through a cheap per-file import-alias table.

libcst's QualifiedNameProvider costs ~6x the parse (FACTS.md). Rules only ever ask about
names that an import binds, so we collect every import in the file once (statements only,
no expressions) and, when a rule asks, check that the name is not re-bound by the
enclosing function. A module-level name bound both by an import and by a def, class or
assignment is ambiguous and resolves to nothing: precision before recall, and the answer
never depends on hash order.
"""

from __future__ import annotations

from typing import Iterator

import libcst as cst


def dotted_name(node: cst.BaseExpression | cst.ImportFrom) -> str | None:
    """`a.b.c` for Name/Attribute chains, else None."""
    # Exact type checks: libcst's classes are ABCs that are never subclassed (see
    # FileContext.enclosing_function), and this runs for nearly every call in a file.
    kind = type(node)
    if kind is cst.Name:
        return node.value
    parts = []
    while kind is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
        kind = type(node)
    if kind is cst.Name:
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def _iter_statements(body, into_scopes: bool = True) -> Iterator[cst.CSTNode]:
    """Every statement, recursing into compound statements (def and class too, unless
    `into_scopes` is False: then a nested def or class is yielded but not entered)."""
    # Exact types throughout (libcst's classes are ABCs, never subclassed): every statement
    # of every file passes here.
    stack = list(reversed(body))
    scopes = (cst.FunctionDef, cst.ClassDef)
    blocks = (cst.IndentedBlock, cst.SimpleStatementSuite)
    tries = (cst.Try, cst.TryStar)
    while stack:
        statement = stack.pop()
        yield statement
        kind = type(statement)
        if kind is cst.SimpleStatementLine:
            stack.extend(reversed(statement.body))
            continue
        if not into_scopes and kind in scopes:
            continue
        children = []
        inner = getattr(statement, "body", None)
        if type(inner) in blocks:
            children.extend(inner.body)
        for attribute in ("orelse", "finalbody"):
            extra = getattr(statement, attribute, None)
            if extra is not None:
                children.append(extra)
        if kind in tries:
            children.extend(statement.handlers)
        if kind is cst.Match:
            for case in statement.cases:
                children.extend(case.body.body)
        stack.extend(reversed(children))


def _import_from_module(node: cst.ImportFrom) -> str | None:
    if node.relative:
        return None  # relative imports are the project's own code, never torch
    if node.module is None:
        return None
    return dotted_name(node.module)


#: What these names mean when a star import is the only thing that can bind them: a
#: project's `common.py` re-exporting `import torch`, `import torch.nn as nn`,
#: `from torch.autograd import Variable` to files that do `from common import *`.
STAR_CONVENTIONS = {
    "torch": "torch",
    "nn": "torch.nn",
    "F": "torch.nn.functional",
    "optim": "torch.optim",
    "Variable": "torch.autograd.Variable",
}


class AliasTable:
    """Maps local names to the fully qualified names their imports bind."""

    def __init__(self, module: cst.Module) -> None:
        self.aliases: dict[str, str] = {}
        self.relative_imports: dict[str, tuple[int, str]] = {}  # name -> (level, "pkg.mod.Name")
        ambiguous: set[str] = set()
        other_bindings: set[str] = set()
        star = False
        for statement in _iter_statements(module.body):
            kind = type(statement)
            if kind is cst.Import:
                for alias in statement.names:
                    full = dotted_name(alias.name)
                    if full is None:
                        continue
                    if alias.asname is not None and type(alias.asname.name) is cst.Name:
                        self._bind(alias.asname.name.value, full, ambiguous)
                    else:
                        top = full.split(".")[0]
                        self._bind(top, top, ambiguous)
            elif kind is cst.ImportFrom:
                module_name = _import_from_module(statement)
                if type(statement.names) is cst.ImportStar:
                    star = True
                    continue
                for alias in statement.names:
                    if type(alias.name) is not cst.Name:
                        continue
                    local = alias.asname.name.value if alias.asname and type(alias.asname.name) is cst.Name else alias.name.value
                    if module_name is None:
                        base = dotted_name(statement.module) if statement.module is not None else ""
                        target = f"{base}.{alias.name.value}" if base else alias.name.value
                        self.relative_imports[local] = (len(statement.relative), target)
                        other_bindings.add(local)
                        continue
                    self._bind(local, f"{module_name}.{alias.name.value}", ambiguous)
        for statement in module.body:
            for name in _bound_names(statement):
                other_bindings.add(name)
        for name in ambiguous | (other_bindings & set(self.aliases)):
            self.aliases.pop(name, None)
        if star:
            # A name no import or assignment of this file binds can only come from its star
            # imports; `torch`, `nn`, `Variable` from one mean what they always mean.
            for name, full in STAR_CONVENTIONS.items():
                if name not in self.aliases and name not in other_bindings and name not in ambiguous:
                    self.aliases[name] = full

    def _bind(self, local: str, full: str, ambiguous: set[str]) -> None:
        previous = self.aliases.get(local)
        if previous is not None and previous != full:
            ambiguous.add(local)
        self.aliases[local] = full

    def resolve(self, dotted: str) -> str | None:
        head, _, rest = dotted.partition(".")
        target = self.aliases.get(head)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target


def _bound_names(statement: cst.CSTNode) -> Iterator[str]:
    """Names a module-level statement binds other than through imports."""
    if type(statement) in (cst.FunctionDef, cst.ClassDef):
        yield statement.name.value
    elif type(statement) is cst.SimpleStatementLine:
        for small in statement.body:
            if type(small) is cst.Assign:
                for target in small.targets:
                    yield from _target_names(target.target)
            elif type(small) in (cst.AnnAssign, cst.AugAssign) and small.value is not None:
                yield from _target_names(small.target)


def _target_names(target: cst.BaseExpression) -> Iterator[str]:
    if type(target) is cst.Name:
        yield target.value
    elif type(target) in (cst.Tuple, cst.List):
        for element in target.elements:
            yield from _target_names(element.value)
    elif type(target) is cst.StarredElement:
        yield from _target_names(target.value)


def local_bindings(function: cst.FunctionDef | cst.Lambda, walrus: bool = True) -> frozenset[str]:
    """Names bound inside a function (parameters, assignments, loops, withs, defs),
    not counting nested functions and classes, which have their own scopes.

    `walrus=False` says the file has no `:=`: then every binding is a statement's, and only
    statements are read (a tenth of the nodes)."""
    names: set[str] = set()
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        names.add(param.name.value)
    for star in (params.star_arg, params.star_kwarg):
        if type(star) is cst.Param:
            names.add(star.name.value)
    if type(function) is cst.Lambda:
        return frozenset(names)
    if not walrus:
        found = _statement_bindings(function.body)
        if found is not None:
            return frozenset(names | found)
    from torchlint.static.walker import iter_nodes

    # Exact-type dispatch: libcst classes are ABCs, so each failed isinstance() is slow, and
    # this runs over every node of a function body.
    scopes = (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.ImportAlias)
    for node in iter_nodes(function.body, skip=scopes):
        kind = type(node).__name__
        if kind in ("FunctionDef", "ClassDef"):
            names.add(node.name.value)  # nested scopes bind their name here, nothing inside
        elif kind == "AssignTarget":
            names.update(_target_names(node.target))
        elif kind in ("AnnAssign", "AugAssign", "For"):
            names.update(_target_names(node.target))
        elif kind == "AsName":
            names.update(_target_names(node.name))
        elif kind == "NamedExpr":
            names.update(_target_names(node.target))
        elif kind == "Global":
            names.difference_update(item.name.value for item in node.names)
        # ImportAlias is skipped: imports anywhere are already in the module alias table, and a
        # name two imports bind differently is dropped there as ambiguous.
    return frozenset(names)


def _statement_bindings(body: cst.BaseSuite) -> set[str] | None:
    """The names the statements of `body` bind (nested def/class: their name only), reading
    statements and never expressions; None when a `match` statement needs the full walk."""
    names: set[str] = set()
    globals_: set[str] = set()
    for statement in _iter_statements(body.body, into_scopes=False):
        kind = type(statement)
        if kind is cst.Assign:
            for target in statement.targets:
                names.update(_target_names(target.target))
        elif kind is cst.AnnAssign or kind is cst.AugAssign or kind is cst.For:
            names.update(_target_names(statement.target))
        elif kind is cst.Global:
            globals_.update(item.name.value for item in statement.names)
        elif kind is cst.FunctionDef or kind is cst.ClassDef:
            names.add(statement.name.value)
        elif kind is cst.With:
            for item in statement.items:
                if item.asname is not None:
                    names.update(_target_names(item.asname.name))
        elif kind is cst.ExceptHandler or kind is cst.ExceptStarHandler:
            if statement.name is not None:
                names.update(_target_names(statement.name.name))
        elif kind is cst.Match:
            return None
    return names - globals_
