"""Refuse, before libcst sees it, code nested deeper than libcst's native parser survives.

libcst's parser recurses on the C stack and dies by SIGSEGV on deep nesting (measured with
libcst 1.9 in a subprocess, default recursion limit: 3,500 nested `lambda:` crash, 3,000 do
not; 10,000 `or` terms or `-` signs crash; 1,500 nested brackets crash). CPython's parser
already refuses more than 200 nested brackets and 100 indentation levels, so what is left
is nesting without brackets, which shows in the depth of the `ast` tree. A few constructs
are flat in `ast` but nested in libcst and are counted as libcst nests them: `a or b or c`
(one BooleanOperation per operator), comprehension clauses (one CompFor per `for`) and
dotted names in imports (one Attribute per dot).

Left-recursive chains also make libcst's parse superlinear (1,000 `.x` links: 5 s; 2,000: 25
s), so the bound keeps such files from stalling a run too.
"""

from __future__ import annotations

import ast
import re

_NEWLINE = re.compile(r"\r\n|\r|\n")

#: Deepest nesting checked. Torch's own sources peak at 31; the shallowest measured crash is
#: 3,500, so the margin covers constructs that cost libcst more stack per level.
MAX_NESTING = 1000

_ITER_CHILDREN = ast.iter_child_nodes


def _extra(node: ast.AST) -> int:
    """Levels libcst adds for `node` that `ast` does not show."""
    kind = type(node)
    if kind is ast.BoolOp:
        return len(node.values) - 1
    if kind in (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp):
        return len(node.generators) - 1
    if kind is ast.Import:
        return max((alias.name.count(".") for alias in node.names), default=0)
    if kind is ast.ImportFrom:
        return (node.module or "").count(".")
    return 0


_FLAT_IN_AST = (ast.BoolOp, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp, ast.Import, ast.ImportFrom)


def nesting_depth(tree: ast.AST, limit: int | None = None) -> int:
    """The nesting depth libcst will see, as far as `ast` shows it. With `limit`, stops as soon
    as the depth exceeds it (the answer is then just some depth above `limit`)."""
    deepest = 0
    stack = [(tree, 1)]
    pop, push = stack.pop, stack.append
    flat = _FLAT_IN_AST
    while stack:
        node, depth = pop()
        if isinstance(node, flat):
            depth += _extra(node)
        if depth > deepest:
            deepest = depth
            if limit is not None and deepest > limit:
                return deepest
        for child in _ITER_CHILDREN(node):
            push((child, depth + 1))
    return deepest


#: A nesting level costs at least one character of a statement (`-`, `(`, `.`, `or`), and
#: statements nest at most 100 indentation levels (two `ast` levels each): a simple statement
#: shorter than this cannot reach MAX_NESTING.
_SHORT_ENOUGH = MAX_NESTING - 2 * 100 - 10


def too_deep(tree: ast.Module, text: str) -> bool:
    """`nesting_depth(tree) > MAX_NESTING`, without walking every expression: only the
    expressions of statements long enough to hold that many levels are walked (in real code,
    none: the full walk cost 0.3x of a libcst parse on timm)."""
    # Lines as CPython numbers them (universal newlines; not str.splitlines, which also
    # breaks at form feeds and U+2028). Columns are UTF-8 byte offsets, so a span counts
    # bytes of non-ASCII text as characters: an overestimate, which only costs a walk.
    starts = [0, *(match.end() for match in _NEWLINE.finditer(text))]

    def span(node: ast.AST) -> int:
        try:
            width = starts[node.end_lineno - 1] + node.end_col_offset - starts[node.lineno - 1] - node.col_offset
        except (AttributeError, IndexError, TypeError):
            return MAX_NESTING  # no usable position: measure it
        return width if width >= 0 else MAX_NESTING

    pending: list[ast.AST] = list(tree.body)
    while pending:
        statement = pending.pop()
        for name, value in ast.iter_fields(statement):
            children = value if isinstance(value, list) else [value]
            for child in children:
                if isinstance(child, ast.stmt):
                    pending.append(child)
                elif isinstance(child, ast.excepthandler):
                    pending.extend(child.body)
                    if child.type is not None and span(child.type) >= _SHORT_ENOUGH and _deep(child.type):
                        return True
                elif isinstance(child, ast.AST) and hasattr(child, "lineno"):
                    if span(child) >= _SHORT_ENOUGH and _deep(child):
                        return True
                elif isinstance(child, ast.AST):
                    # arguments, comprehensions, match cases: no position of their own
                    if any(span(n) >= _SHORT_ENOUGH for n in ast.walk(child) if hasattr(n, "lineno")) and _deep(child):
                        return True
    return False


def _deep(expression: ast.AST) -> bool:
    """An expression nested deeper than the bound leaves for it under up to 100 indented
    statements (two `ast` levels each)."""
    limit = MAX_NESTING - 2 * 100
    return nesting_depth(expression, limit) > limit


def deepest_line(tree: ast.AST) -> int:
    """The first line of a statement nested deeper than half the bound (1 if none is found):
    where to point the finding. Only called for a file already refused."""
    half = MAX_NESTING // 2
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            if _extra(node) > half or any(
                not isinstance(child, ast.stmt) and nesting_depth(child, half) > half for child in _ITER_CHILDREN(node)
            ):
                lines.append(node.lineno)
    return min(lines, default=1)


#: For code CPython's `ast` refuses but libcst may accept (syntax newer than the running
#: Python, such as `def f[T]()` checked under 3.11), the bound comes from tokens: nesting
#: needs at least one token a level, and 1,500 nested brackets (3,000 tokens) crash libcst.
MAX_TOKENS_PER_STATEMENT = 2000
#: CPython's own limit on indentation levels, which `ast` would otherwise have enforced.
MAX_INDENT_LEVELS = 100


def shallow_by_tokens(text: str) -> bool:
    """Whether no statement of `text` has more tokens, nor more indentation levels, than
    libcst safely parses. False also when the text cannot be tokenized at all."""
    import io
    import tokenize

    statement_end = (tokenize.NEWLINE, tokenize.ENDMARKER)
    count = indent = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            kind = token.type
            if kind in statement_end:
                count = 0
                continue
            if kind == tokenize.INDENT:
                indent += 1
                if indent > MAX_INDENT_LEVELS:
                    return False
            elif kind == tokenize.DEDENT:
                indent -= 1
            count += 1
            if count > MAX_TOKENS_PER_STATEMENT:
                return False
    except (tokenize.TokenError, SyntaxError):
        return False
    return True
