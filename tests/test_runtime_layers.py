"""The modules of ``torchlint.runtime`` are layered: no import cycle among them, and a
subpackage imports only from the subpackages below it (``LAYERS``).

Every import counts, function-level ones included: a lazy import still ties two modules
together, and a circle through one is a circle the next refactoring trips on. The one kind
left out is an import under ``if TYPE_CHECKING:``, which never runs (annotations only).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "torchlint" / "runtime"
PACKAGE = "torchlint.runtime"

#: The subpackages of torchlint.runtime, lowest first. A module may import from its own
#: subpackage, from the shared modules at the top of runtime/ (the layer below them all) and
#: from the subpackages listed before its own; never from one listed after it (the order and
#: why: torchlint/runtime/README.md).
LAYERS = ["devices", "merge", "report", "compile", "distributed", "child", "parent"]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runs(node: ast.AST) -> bool:
    """False for an `if TYPE_CHECKING:` block."""
    if isinstance(node, ast.If):
        test = node.test
        name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
        return name != "TYPE_CHECKING"
    return True


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The runtime modules `path` imports at run time, at any depth."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    stack = [ast.parse(path.read_text(encoding="utf-8"))]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            found |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names}
        if isinstance(node, ast.If) and not _runs(node):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return {module for module in found if module in modules} - {name}


def runtime_graph() -> dict[str, set[str]]:
    paths = sorted(RUNTIME.rglob("*.py"))
    modules = {module_name(path) for path in paths}
    return {module_name(path): imports_of(path, modules) for path in paths}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for other in sorted(graph[module]):
            if state.get(other) == 1:
                return path[path.index(other):] + [other]
            if other not in state and (cycle := visit(other)):
                return cycle
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def layer_of(module: str, layers: list[str]) -> str:
    """The subpackage `module` belongs to, or "" for the shared modules at the top of runtime/."""
    parts = module.split(".")
    return parts[2] if len(parts) > 3 or (len(parts) == 3 and parts[2] in layers) else ""


def rank_of(layer: str, layers: list[str]) -> int:
    return 0 if layer == "" else layers.index(layer) + 1


def upward_imports(graph: dict[str, set[str]], layers: list[str]) -> list[str]:
    """Each import of a module from a layer above its own, in words."""
    found = []
    for module, imported in sorted(graph.items()):
        own = layer_of(module, layers)
        for other in sorted(imported):
            above = layer_of(other, layers)
            if rank_of(above, layers) > rank_of(own, layers):
                where = f"runtime/{own}/" if own else "the top of runtime/"
                found.append(f"{module} imports {other}: {above}/ is above {where} in LAYERS")
    return found


def test_every_runtime_subpackage_has_a_layer():
    subpackages = sorted(path.parent.name for path in RUNTIME.glob("*/__init__.py"))
    assert sorted(LAYERS) == subpackages, "declare each subpackage of torchlint/runtime/ in LAYERS, once"


def test_runtime_subpackages_import_only_from_layers_below():
    offending = upward_imports(runtime_graph(), LAYERS)
    assert not offending, "imports against the layer order:\n" + "\n".join(offending)


def test_the_layer_check_names_an_upward_import():
    graph = {
        f"{PACKAGE}.frames": set(),
        f"{PACKAGE}.devices.meta": {f"{PACKAGE}.frames", f"{PACKAGE}.child.probing"},
        f"{PACKAGE}.child.probing": {f"{PACKAGE}.devices.meta", f"{PACKAGE}.child.steps"},
        f"{PACKAGE}.child.steps": {f"{PACKAGE}.child"},
        f"{PACKAGE}.child": set(),
    }
    assert upward_imports(graph, ["devices", "child"]) == [
        f"{PACKAGE}.devices.meta imports {PACKAGE}.child.probing: child/ is above runtime/devices/ in LAYERS",
    ]
    graph[f"{PACKAGE}.frames"] = {f"{PACKAGE}.devices"}
    assert upward_imports(graph, ["devices", "child"]) == [
        f"{PACKAGE}.devices.meta imports {PACKAGE}.child.probing: child/ is above runtime/devices/ in LAYERS",
        f"{PACKAGE}.frames imports {PACKAGE}.devices: devices/ is above the top of runtime/ in LAYERS",
    ]


def test_no_import_cycle_among_runtime_modules():
    cycle = find_cycle(runtime_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_graph_sees_lazy_and_relative_imports_but_not_type_checking_ones(tmp_path):
    sample = tmp_path / "torchlint" / "runtime" / "sample.py"
    sample.parent.mkdir(parents=True)
    sample.write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import frames\n"
        "if TYPE_CHECKING:\n    from torchlint.runtime.child.probing import Probe\n"
        "def later():\n    from torchlint.runtime.report.text import write_json\n",
    )
    modules = {"torchlint.runtime.frames", "torchlint.runtime.child.probing", "torchlint.runtime.report.text"}
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        found = imports_of(sample, modules)
    finally:
        ROOT = saved
    assert found == {"torchlint.runtime.frames", "torchlint.runtime.report.text"}


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
