"""Fix differential: what `--fix` changes, compared with `ast`.

For one file: run the real fixer (`fix_text`, plain and with unsafe fixes) and require that
the result parses and that fixing it again changes nothing. Then replay the fixes pass by
pass and compare each pass's `ast` with the one before: every difference must lie inside a
span a fix replaced, and where the span is one whole node, the new node must be exactly the
fix's text (a replacement that needed parentheses would merge into its parent and show up
as a difference outside the span). Unrelated code's AST is unchanged.

Shared by tests/test_fix_differential.py (bounded) and benchmarks/reliability.py (timm).
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass, field

from torchlint.fix.apply import apply_fixes
from torchlint.fix.runner import MAX_PASSES, fix_text, wanted
from torchlint.static.lines import python_lines


@dataclass
class DiffFigures:
    files: int = 0
    fixed_files: int = 0
    fixes: int = 0  # fixes whose AST change was compared
    problems: list[str] = field(default_factory=list)


def _parse(text: str) -> ast.Module | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None


class _Spans:
    """ast positions (UTF-8 byte columns) as 1-based code-point (line, column) pairs."""

    def __init__(self, text: str) -> None:
        self.lines = python_lines(text)

    def of(self, node: ast.AST) -> tuple[tuple[int, int], tuple[int, int]] | None:
        if getattr(node, "end_lineno", None) is None:
            return None
        return self._point(node.lineno, node.col_offset), self._point(node.end_lineno, node.end_col_offset)

    def _point(self, line: int, byte_column: int) -> tuple[int, int]:
        text = self.lines[line - 1] if line <= len(self.lines) else ""
        return line, len(text.encode("utf-8")[:byte_column].decode("utf-8", "replace")) + 1


def _same(a, b) -> bool:
    return ast.dump(a) == ast.dump(b) if isinstance(a, ast.AST) and isinstance(b, ast.AST) else a == b


def _content_node(content: str):
    for mode in ("eval", "exec"):
        tree = _parse_mode(content, mode)
        if tree is not None:
            return tree.body if mode == "eval" else (tree.body[0] if len(tree.body) == 1 else None)
    return None


def _parse_mode(text: str, mode: str):
    try:
        return ast.parse(text.strip(), mode=mode)
    except (SyntaxError, ValueError):
        return None


def ast_changes_outside(before: str, after: str, edits) -> list[str]:
    """Where `after`'s AST differs from `before`'s other than inside an edit's span, or where
    a whole node an edit replaced is not the edit's text."""
    old, new = _parse(before), _parse(after)
    if old is None or new is None:
        return [] if old is None else ["the fixed text does not parse"]
    spans = _Spans(before)
    regions = [((e.line, e.column), (e.end_line, e.end_column), e.content) for e in edits]
    problems: list[str] = []

    def walk(a, b, where: str) -> None:
        if _same(a, b):
            return
        span = spans.of(a)
        if span is not None:
            for start, end, content in regions:
                if start <= span[0] and span[1] <= end:
                    if (start, end) == span:
                        replaced = _content_node(content)
                        if replaced is not None and type(replaced) is type(b) and not _same(replaced, b):
                            problems.append(f"line {span[0][0]}: the new {type(b).__name__} is not the fix's text {content!r}")
                    return
        if type(a) is not type(b):
            problems.append(f"{where}: {type(a).__name__} became {type(b).__name__} outside any fix")
            return
        for name in a._fields:
            va, vb = getattr(a, name, None), getattr(b, name, None)
            if isinstance(va, list) and isinstance(vb, list) and len(va) == len(vb):
                for index, (x, y) in enumerate(zip(va, vb)):
                    walk(x, y, f"{where}.{name}[{index}]")
            elif isinstance(va, ast.AST) and isinstance(vb, ast.AST):
                walk(va, vb, f"{where}.{name}")
            elif not _same(va, vb):
                line = span[0][0] if span else "?"
                problems.append(f"{where} (line {line}): `{name}` changed outside any fix")

    walk(old, new, "module")
    return problems


def differential(engine, path: str, text: str, figures: DiffFigures) -> None:
    """Fix `text` (named `path`) as --fix and --fix --unsafe-fixes would; record problems."""
    figures.files += 1
    for unsafe in (False, True):
        label = f"{path} ({'--unsafe-fixes' if unsafe else '--fix'})"
        try:
            result, fixed = fix_text(engine, path, text, unsafe=unsafe)
        except Exception as exc:
            figures.problems.append(f"{label}: fixing raised {type(exc).__name__}: {exc}")
            continue
        if fixed == text:
            continue
        figures.fixed_files += 1
        if _parse(text) is not None and _parse(fixed) is None:
            figures.problems.append(f"{label}: the fixed file does not parse")
            continue
        _, again = fix_text(engine, path, fixed, unsafe=unsafe)
        if again != fixed:
            figures.problems.append(f"{label}: not idempotent: a second fix changed it again")
        figures.problems.extend(f"{label}: {p}" for p in _replay(engine, path, text, unsafe, figures))


def _replay(engine, path: str, text: str, unsafe: bool, figures: DiffFigures) -> list[str]:
    """The fixer's passes one at a time, each pass's AST against the one before."""
    from torchlint.fix.runner import _recheck

    problems = []
    for _ in range(MAX_PASSES):
        fixes = [f.fix for f in _recheck(engine, path, text) if wanted(f, unsafe) and f.fix is not None]
        attempt = apply_fixes(text, fixes)
        if not attempt.fixes:
            break
        figures.fixes += len(attempt.fixes)
        edits = [edit for fix in attempt.fixes for edit in fix.edits]
        problems.extend(ast_changes_outside(text, attempt.text, edits))
        text = attempt.text
    return problems
