"""Static fuzz on torch's own installed sources: real code, mutated in the ways real files
differ (page breaks, CRLF, lone CR, a BOM, tabs, odd separators in comments, a deeply
nested expression), checked with every rule.

What must hold for every mutated file: the check raises nothing and no rule crashes
(TL001); every finding's lines exist in the file; and a mutation that does not change the
code's meaning (all but the deep nesting) gives the same findings as the original, each on
the same code text (its line moved by the lines the mutation inserted).

Shared by tests/test_torch_sources_fuzz.py (a few files) and benchmarks/reliability.py.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from torchlint.fix.apply import line_starts, slice_span
from torchlint.static.lines import python_lines

_LEADING_SPACES = re.compile(r"^((?:    )+)", re.M)


def torch_sources(limit_bytes: int = 60_000) -> list[Path]:
    """torch's installed .py files up to `limit_bytes` each, in a stable order."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return []
    root = Path(next(iter(spec.submodule_search_locations)))
    return sorted(p for p in root.rglob("*.py") if p.stat().st_size <= limit_bytes)


def _statement_starts(text: str) -> list[int]:
    """0-based indexes of lines that start a top-level statement: a line inserted before one
    is outside any bracket, string or block body."""
    import ast

    def first_line(node) -> int:  # a decorated definition starts at its first decorator
        return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])

    return sorted({first_line(node) - 1 for node in ast.parse(text).body} | {len(python_lines(text))})


def _insert_line(text: str, rnd: random.Random, line: str) -> tuple[str, int]:
    lines = python_lines(text, keepends=True)
    at = rnd.choice(_statement_starts(text))
    return "".join(lines[:at] + [line] + lines[at:]), at + 1


def seed_findings(text: str, rnd: random.Random, count: int = 4) -> str:
    """`text` with torch imports and `count` finding-rich snippets (tests/fuzzing.py's) put
    before top-level statements: torch's own code has few findings to compare."""
    import ast

    from fuzzing import HEADER, SNIPPETS

    body = ast.parse(text).body
    future = max((node.end_lineno for node in body if isinstance(node, ast.ImportFrom) and node.module == "__future__"), default=0)
    lines = python_lines(text, keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"
    starts = [at for at in _statement_starts(text) if at >= future]
    inserts = {min(starts): [HEADER]}
    for _ in range(count):
        inserts.setdefault(rnd.choice(starts), []).append(rnd.choice(SNIPPETS))
    out = []
    for index in range(len(lines) + 1):
        out.extend(inserts.get(index, ()))
        out.extend(lines[index : index + 1])
    return "".join(out)


#: name -> mutate(text, rnd) -> (new text, 1-based line at which one line was inserted or None)
MUTATIONS = {
    "form-feed line": lambda text, rnd: _insert_line(text, rnd, "\x0c\n"),
    "separators in a comment": lambda text, rnd: _insert_line(text, rnd, "# \x0b \x1c \x1d \x1e \x85 \u2028 \u2029\n"),
    "crlf": lambda text, rnd: (text.replace("\n", "\r\n"), None),
    "lone cr": lambda text, rnd: (text.replace("\n", "\r"), None),
    "bom": lambda text, rnd: ("\ufeff" + text, None),
    "tabs": lambda text, rnd: (_LEADING_SPACES.sub(lambda m: "\t" * (len(m.group(1)) // 4), text), None),
    "deep nesting": lambda text, rnd: (text + "\nx = " + "(" * 400 + "1" + ")" * 400 + "\n", None),
}
#: Mutations after which the findings must be the same, on the same code.
SAME_FINDINGS = frozenset(MUTATIONS) - {"deep nesting"}


@dataclass
class FuzzFigures:
    files: int = 0
    mutants: int = 0
    findings: int = 0
    problems: list[str] = field(default_factory=list)


def _observed(engine, folder: Path, name: str, data: bytes) -> tuple[list, str]:
    path = folder / name
    path.write_bytes(data)
    result = engine.check_paths([path], cwd=folder)
    text = data.decode("utf-8-sig")
    return [f for f in result.findings if f.path.endswith(name)], text


def _code_at(text: str, finding) -> str | None:
    """The finding's code, whitespace collapsed (a span over lines holds their indentation)."""
    loc = finding.location
    code = slice_span(text, line_starts(text), (loc.line, loc.column, loc.end_line, loc.end_column))
    return None if code is None else " ".join(code.split())


def _keyed(text: str, findings, inserted: int | None) -> Counter:
    """(code, original line, code text) per finding; lines after an inserted one moved up."""
    out = Counter()
    for finding in findings:
        line = finding.location.line
        if inserted is not None and line > inserted:
            line -= 1
        out[(finding.code, line, _code_at(text, finding))] += 1
    return out


def fuzz_file(engine, folder: Path, source: Path, rnd: random.Random, figures: FuzzFigures, mutations=None) -> None:
    """Check `source` and its mutants; record every broken property in `figures.problems`."""
    try:
        text = source.read_bytes().decode("utf-8")
        _statement_starts(text)
    except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return  # a file Python itself does not take is no baseline
    label = source.name
    figures.files += 1
    text = seed_findings(text, rnd)
    try:
        found, _ = _observed(engine, folder, "case.py", text.encode())
    except Exception as exc:
        figures.problems.append(f"{label}: check raised {type(exc).__name__}: {exc}")
        return
    figures.findings += len(found)
    expected = _keyed(text, found, None)
    for name in mutations or MUTATIONS:
        mutated, inserted = MUTATIONS[name](text, rnd)
        figures.mutants += 1
        where = f"{label} [{name}]"
        try:
            got, decoded = _observed(engine, folder, "case.py", mutated.encode("utf-8"))
        except Exception as exc:
            figures.problems.append(f"{where}: check raised {type(exc).__name__}: {exc}")
            continue
        count = len(python_lines(decoded))
        for finding in got:
            if finding.code == "TL001":
                figures.problems.append(f"{where}: a rule crashed: {finding.message}")
            elif not (1 <= finding.location.line <= finding.location.end_line <= max(count, 1)):
                figures.problems.append(f"{where}: {finding.code} on line {finding.location.line} of a {count}-line file")
        if name in SAME_FINDINGS:
            kept = _keyed(decoded, got, inserted)
            if kept != expected:
                lost, extra = expected - kept, kept - expected
                figures.problems.append(f"{where}: findings differ: lost {sorted(lost)[:3]}, new {sorted(extra)[:3]}")
            _check_noqa(engine, folder, mutated, got, rnd, where, figures)


def _check_noqa(engine, folder: Path, text: str, found, rnd: random.Random, where: str, figures: FuzzFigures) -> None:
    """`# noqa: CODE` as `--add-noqa` writes it silences that code on its own line, nothing
    else, and is not reported unused (TL003)."""
    from torchlint.add_noqa import NOT_SILENCED, silencing_line

    candidates = [f for f in found if f.code not in NOT_SILENCED]
    if not candidates:
        return
    finding = rnd.choice(candidates)
    decoded = text.removeprefix("\ufeff")
    edit = silencing_line(decoded, finding)
    if edit is None:
        return
    number, new_line = edit
    lines = python_lines(text, keepends=True)
    old = lines[number - 1]
    lines[number - 1] = new_line + old[len(old.rstrip("\r\n")):]
    figures.mutants += 1
    after, _ = _observed(engine, folder, "case.py", "".join(lines).encode("utf-8"))
    silenced = {id(f) for f in found if f.code == finding.code and number in (f.location.line, f.location.end_line)}
    want = Counter((f.code, f.location.line, f.location.column) for f in found if id(f) not in silenced)
    have = Counter((f.code, f.location.line, f.location.column) for f in after)
    if have != want:
        figures.problems.append(f"{where} + noqa on line {number} for {finding.code}: lost {sorted(want - have)[:3]}, new {sorted(have - want)[:3]}")
