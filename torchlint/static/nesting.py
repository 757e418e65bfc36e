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
from itertools import accumulate, compress

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


# -- the cheap proof: a bound from the text alone ---------------------------------------------
#: Strings, comments and backslash continuations, the way the tokenizer splits them (strings
#: need no prefix here: a prefix is letters, which the counts below treat as names). Every
#: alternative starts with `'`, `"`, `#` or `\\`, so `re` skips other text at C speed.
_LEXEMES = re.compile(
    r"'''(?:[^'\\]++|\\.|'(?!''))*+'''"
    r'|"""(?:[^"\\]++|\\.|"(?!""))*+"""'
    r"|'(?:[^'\\\n]++|\\.)*+'"
    r'|"(?:[^"\\\n]++|\\.)*+"'
    r"|#[^\r\n]*+|\\\r?\n",
    re.DOTALL,
)
#: Every token that can add a level to libcst's tree: brackets, operators (unary and binary),
#: attribute dots, the keywords that nest (`a or b or c` is one BooleanOperation per `or`),
#: and adjacent strings (one ConcatenatedString per pair). Names and numbers glued to a
#: keyword (`1or 2`) still count it; over-counting only costs a fall back to `ast`.
_NESTING_TOKEN = re.compile(r"[-+*/%@&|^~<>.(\[{]|(?<![A-Za-z_])(?:and|or|not|lambda|if|await|for|yield)|\$(?=\s*[rRbBuUfF]{0,2}\$)")
_NOT_BRACKET = re.compile(r"[^()\[\]{}\n]+")
_BRACKET_DEPTH_CHANGE = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1, "\n": 0}
#: A statement may hold this many nesting tokens (the bound `ast` checked was MAX_NESTING
#: levels; a level needs a token). Real code peaks far below: timm's largest config dicts.
_MAX_STATEMENT_TOKENS = MAX_NESTING
#: CPython refuses more than 200 nested brackets; libcst crashes at 1,500.
_MAX_BRACKET_DEPTH = 200
#: Each `elif` nests the next `if` in libcst (10,000 crash it); 3,000 parse in 0.25 s.
_MAX_ELIFS = 500


class _Unsure(Exception):
    pass


def within_libcst_bounds(text: str) -> bool:
    """True when the text alone proves libcst parses it safely and promptly, at a tenth of
    what `ast.parse` costs; False means "not proven" (ask `ast`). libcst's own tokenizer
    refuses more than 100 indentation levels, as CPython's does, so statements cannot nest
    deeper than that; what is left to bound is how deep one statement goes, which is at most
    the number of its nesting tokens. Sound for Python 3.11 syntax; an f-string that might
    use 3.12's nested quotes is "not proven"."""
    try:
        masked = _LEXEMES.sub(_placeholder_for(text), text)
    except _Unsure:
        return False
    if len(masked) <= _MAX_STATEMENT_TOKENS:
        return True
    if masked.count("elif") > _MAX_ELIFS:
        return False
    skeleton = _NOT_BRACKET.sub("", masked)
    depths = list(accumulate(map(_BRACKET_DEPTH_CHANGE.__getitem__, skeleton)))
    if depths and max(depths) > _MAX_BRACKET_DEPTH:
        return False
    # A statement ends at a newline outside brackets (continuations were masked to spaces).
    line_end_depths = compress(depths, map("\n".__eq__, skeleton))
    lines = masked.split("\n")
    start = length = 0
    for index, (line, depth) in enumerate(zip(lines, line_end_depths)):
        length += len(line) + 1
        if depth == 0:
            if length > _MAX_STATEMENT_TOKENS and _too_many_tokens(lines[start : index + 1]):
                return False
            start, length = index + 1, 0
    rest = lines[start:]
    return sum(map(len, rest)) <= _MAX_STATEMENT_TOKENS or not _too_many_tokens(rest)


def _too_many_tokens(lines: list[str]) -> bool:
    return len(_NESTING_TOKEN.findall("\n".join(lines))) > _MAX_STATEMENT_TOKENS


def _placeholder_for(text: str):
    """What each lexeme of `text` becomes: comments vanish, continuations become a space,
    strings a `$` (not a name character, so `"a"or"b"` still shows its `or`)."""

    def placeholder(match: re.Match[str]) -> str:
        lexeme = match.group()
        first = lexeme[0]
        if first == "#":
            return ""
        if first == "\\":
            return " "
        start = match.start()
        prefix = text[max(0, start - 2) : start]
        if prefix[-1:] in ("f", "F") or (prefix[:1] in ("f", "F") and prefix[-1:] in ("r", "R")):
            _check_f_string(lexeme)
        return "$"

    return placeholder


def _check_f_string(lexeme: str) -> None:
    """An f-string's fields are code libcst nests: bound them too. Unbalanced braces mean the
    string may go on past this quote (3.12 lets a field reuse the quote): not proven. Literal
    braces come in pairs (`{{`, `}}`) and each field opens and closes once, so a quote inside
    an open field always leaves the counts unequal."""
    if lexeme.count("{") != lexeme.count("}"):
        raise _Unsure
    if len(lexeme) > 200 and len(_NESTING_TOKEN.findall(lexeme)) > 200:
        raise _Unsure
