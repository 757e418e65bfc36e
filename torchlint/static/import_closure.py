"""A file's static import closure: the project files it imports, directly or not, read with
``ast`` (no code runs). Used by `torchlint run` for the files it checks and reports
(``runtime.parent.scope``) and by the language server for the files a first check cannot do
without (``lsp.linting``).

A module is looked up in the file's folder (a script's ``sys.path[0]``) and then in the given
roots; ``import a.b.c`` brings in ``a/__init__.py`` and ``a/b/__init__.py`` too, ``from pkg
import name`` the submodule ``pkg/name.py`` when there is one, and relative imports resolve
against the importing file's package. Imports anywhere in a file count (inside functions,
``try`` blocks): it is an over-approximation, never a guess at what runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

#: Enough for any real project; a runaway closure (a vendored tree) stops here.
MAX_FILES = 2000


def import_closure(target: Path, roots: list[Path]) -> list[Path]:
    """The target and every project file it imports, directly or not, sorted."""
    target = target.resolve()
    search = []
    for root in [target.parent, *roots]:
        root = root.resolve()
        if root not in search:
            search.append(root)
    seen: set[Path] = {target}
    todo = [target]
    while todo and len(seen) < MAX_FILES:
        current = todo.pop()
        for found in _imports_of(current, search):
            found = found.resolve()
            if found not in seen and found.is_file():
                seen.add(found)
                todo.append(found)
    return sorted(seen)


def _imports_of(path: Path, search: list[Path]) -> list[Path]:
    try:
        data = path.read_bytes()
        if path.suffix.lower() == ".ipynb":
            from torchlint.notebook import Notebook

            data = Notebook.parse(data).source
        tree = ast.parse(data, str(path))
    except (OSError, SyntaxError, ValueError):  # a NotebookError is a ValueError
        return []
    found: list[Path] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found += _module_files(alias.name, search)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = path.parent
                for _ in range(node.level - 1):
                    base = base.parent
                roots = [base]
                name = node.module or ""
                found += _relative_files(name, base)
            else:
                roots = search
                name = node.module or ""
                found += _module_files(name, search)
            for alias in node.names:  # `from pkg import module`
                if alias.name != "*":
                    dotted = f"{name}.{alias.name}" if name else alias.name
                    found += _module_files(dotted, roots, parents=False)
    return found


def _relative_files(name: str, base: Path) -> list[Path]:
    if not name:
        init = base / "__init__.py"
        return [init] if init.is_file() else []
    return _module_files(name, [base])


def _module_files(dotted: str, search: list[Path], parents: bool = True) -> list[Path]:
    """The file of module ``dotted`` in the first root that has it, with its packages' __init__."""
    if not dotted:
        return []
    parts = dotted.split(".")
    for root in search:
        module = root.joinpath(*parts)
        for candidate in (module.with_name(parts[-1] + ".py"), module / "__init__.py"):
            if candidate.is_file():
                inits = []
                if parents:
                    for depth in range(1, len(parts)):
                        init = root.joinpath(*parts[:depth], "__init__.py")
                        if init.is_file():
                            inits.append(init)
                return [candidate, *inits]
    return []
