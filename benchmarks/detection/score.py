"""Detection quality of torchlint's core static rules on a labelled corpus.

Every folder under `programs/` is one small PyTorch program. Its expected findings are
written as comments on the lines they belong to:

    loss = criterion(probs, y)  # expect: TL101 -- probabilities reach CrossEntropyLoss
    state = torch.load(path)    # safe: TL301 -- saved by this same script a few lines up

`expect` means a finding of that code must start on the line; `safe` marks a hard negative:
a finding of that code there is a false positive. One comment may hold several labels
separated by `#` (`# expect: TL201 -- ... # safe: TL103 -- ...`) and one label several
codes (`# expect: TL101, TL102 -- ...`). A finding on a line that has no label for its code
is "unlabelled": listed for the labeller to read, never counted as a false positive.

Each program is checked on its own (`torchlint check ... <program dir>`, run inside that
dir), so cross-file patterns resolve within the program and nowhere else.

`--corpus PATH ...` runs the same rules over external source trees and prints findings per
1,000 files per rule: unlabelled, for reading.

This is a benchmark, not a test: it always exits 0.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
import time
import tokenize
from dataclasses import asdict, dataclass, field
from pathlib import Path

CORE_RULES = ("TL101", "TL102", "TL103", "TL201", "TL301")
#: Rules added from the peers' suites (benchmarks/peer_suites.py), scored on their own programs.
PEER_RULES = ("TL109", "TL406", "TL407", "TL610", "TL611", "TL612", "TL808")
SCORED_RULES = CORE_RULES + PEER_RULES
HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"

# One label: `expect: TL101 -- reason` or `safe: TL101, TL102 -- reason`.
_LABEL = re.compile(
    r"^(?P<kind>expect|safe):\s*(?P<codes>TL\d{3}(?:\s*,\s*TL\d{3})*)\s*--\s*(?P<reason>\S.*?)\s*$"
)
# A comment that tries to be a label; used to report malformed ones instead of ignoring them.
_LABEL_LIKE = re.compile(r"^\s*(expect|safe)\s*:", re.IGNORECASE)


class LabelError(ValueError):
    """A comment that starts like a label but does not parse as one."""


@dataclass(frozen=True)
class Label:
    path: str  # relative to the program dir, with forward slashes
    line: int
    code: str
    kind: str  # "expect" or "safe"
    reason: str


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    code: str
    message: str


def parse_comment(comment: str) -> list[tuple[str, str, str]]:
    """`# expect: TL101 -- why # safe: TL201 -- why` -> [(kind, code, reason), ...].

    Parts of the comment that are not labels (an ordinary remark) are ignored; a part that
    starts with `expect:`/`safe:` but does not parse raises LabelError.
    """
    labels = []
    for part in comment.lstrip("#").split("#"):
        part = part.strip()
        if not _LABEL_LIKE.match(part):
            continue
        match = _LABEL.match(part)
        if match is None:
            raise LabelError(f"malformed label {part!r}: want `expect|safe: TLnnn[, TLnnn] -- reason`")
        for code in re.split(r"\s*,\s*", match["codes"]):
            labels.append((match["kind"], code, match["reason"]))
    return labels


def parse_labels(source: str, path: str) -> list[Label]:
    """Every label in one file's comments. Raises LabelError (naming path:line) on a bad one."""
    labels = []
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        line = token.start[0]
        try:
            parsed = parse_comment(token.string)
        except LabelError as error:
            raise LabelError(f"{path}:{line}: {error}") from None
        for kind, code, reason in parsed:
            labels.append(Label(path, line, code, kind, reason))
    return labels


def program_files(program: Path) -> list[Path]:
    return sorted(p for p in program.rglob("*.py") if "__pycache__" not in p.parts)


def program_labels(program: Path) -> list[Label]:
    labels = []
    for file in program_files(program):
        rel = file.relative_to(program).as_posix()
        labels.extend(parse_labels(file.read_text(encoding="utf-8"), rel))
    return labels


# `python -m torchlint` would put the checked tree's folder first on sys.path, and torch's own
# sources (random.py, signal/) then shadow the standard library inside torchlint itself.
_RUN_TORCHLINT = (
    "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
    "from torchlint.cli import main; sys.exit(main())"
)


def _torchlint_command(args_torchlint: str | None) -> list[str]:
    if args_torchlint:
        return args_torchlint.split()
    return [sys.executable, "-c", _RUN_TORCHLINT]


_ISOLATING: dict[tuple[str, ...], list[str]] = {}


def _isolated(torchlint: list[str]) -> list[str]:
    """`--no-project-context` where the build has it: a program is its own project, though
    it sits inside this repository (whose other files a check of some files would read)."""
    key = tuple(torchlint)
    if key not in _ISOLATING:
        try:
            shown = subprocess.run(torchlint + ["check", "--help"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
            _ISOLATING[key] = ["--no-project-context"] if "--no-project-context" in shown.stdout else []
        except (OSError, subprocess.TimeoutExpired):
            _ISOLATING[key] = []
    return _ISOLATING[key]


def run_torchlint(target: Path, torchlint: list[str], timeout: float) -> tuple[list[Finding], str | None]:
    """Findings of the core rules on `target` (run from inside it), or an error message."""
    command = torchlint + [
        "check", "--no-cache", "--exit-zero", *_isolated(torchlint), "--select", ",".join(SCORED_RULES),
        "--output-format", "json", ".",
    ]
    try:
        done = subprocess.run(
            command, cwd=target, capture_output=True, text=True, timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return [], f"timed out after {timeout:.0f} s"
    except OSError as error:
        return [], f"could not start {command[0]}: {error}"
    if done.returncode not in (0, 1):
        return [], f"exit {done.returncode}: {done.stderr.strip()[-500:]}"
    if not done.stdout.strip():  # the JSON format prints `[]` when there is nothing to report
        return [], f"no output (exit {done.returncode}): {done.stderr.strip()[-500:]}"
    try:
        raw = json.loads(done.stdout)
    except json.JSONDecodeError as error:
        return [], f"unreadable JSON output ({error}): {done.stdout[:200]!r}"
    findings = []
    for item in raw:
        path = Path(os.path.normpath(item["filename"])).as_posix()
        findings.append(Finding(path, int(item["location"]["row"]), item["code"], item["message"]))
    return findings, None


@dataclass
class RuleScore:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None


@dataclass
class Outcome:
    """Where one program's labels and findings agree and disagree."""

    misses: list[Label] = field(default_factory=list)
    false_positives: list[tuple[Label, Finding]] = field(default_factory=list)
    hits: list[Label] = field(default_factory=list)
    clean: list[Label] = field(default_factory=list)  # safe labels with no finding
    unlabelled: list[Finding] = field(default_factory=list)


def score_program(labels: list[Label], findings: list[Finding]) -> Outcome:
    """Match findings to labels by (file, line, code). Several findings on one labelled
    line count once: the label is the unit."""
    found: dict[tuple[str, int, str], Finding] = {}
    for finding in findings:
        found.setdefault((finding.path, finding.line, finding.code), finding)
    labelled = {(label.path, label.line, label.code) for label in labels}
    outcome = Outcome()
    for label in labels:
        finding = found.get((label.path, label.line, label.code))
        if label.kind == "expect":
            (outcome.hits if finding else outcome.misses).append(label)
        elif finding:
            outcome.false_positives.append((label, finding))
        else:
            outcome.clean.append(label)
    outcome.unlabelled = [f for key, f in sorted(found.items()) if key not in labelled]
    return outcome


def tally(outcomes: dict[str, Outcome]) -> dict[str, RuleScore]:
    scores = {code: RuleScore() for code in SCORED_RULES}
    for outcome in outcomes.values():
        for label in outcome.hits:
            scores.setdefault(label.code, RuleScore()).tp += 1
        for label in outcome.misses:
            scores.setdefault(label.code, RuleScore()).fn += 1
        for label, _ in outcome.false_positives:
            scores.setdefault(label.code, RuleScore()).fp += 1
        for label in outcome.clean:
            scores.setdefault(label.code, RuleScore()).tn += 1
    return scores


def total(scores: dict[str, RuleScore]) -> RuleScore:
    overall = RuleScore()
    for score in scores.values():
        overall.tp += score.tp
        overall.fp += score.fp
        overall.fn += score.fn
        overall.tn += score.tn
    return overall


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_table(scores: dict[str, RuleScore]) -> str:
    rows = ["| rule | expect | safe | TP | FP | FN | TN | precision | recall |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for code, s in list(scores.items()) + [("all", total(scores))]:
        rows.append(
            f"| {code} | {s.tp + s.fn} | {s.fp + s.tn} | {s.tp} | {s.fp} | {s.fn} | {s.tn} "
            f"| {_ratio(s.precision)} | {_ratio(s.recall)} |"
        )
    return "\n".join(rows)


def score_corpus(programs_dir: Path, torchlint: list[str], timeout: float, only: list[str] | None = None):
    outcomes: dict[str, Outcome] = {}
    errors: dict[str, str] = {}
    for program in sorted(p for p in programs_dir.iterdir() if p.is_dir()):
        if only and program.name not in only:
            continue
        try:
            labels = program_labels(program)
        except (LabelError, SyntaxError, tokenize.TokenError, UnicodeDecodeError) as error:
            errors[program.name] = f"labels: {error}"
            continue
        findings, error = run_torchlint(program, torchlint, timeout)
        if error:
            errors[program.name] = error
            continue
        outcomes[program.name] = score_program(labels, findings)
    for name in only or ():
        if not (programs_dir / name).is_dir():
            errors[name] = f"no program folder {name!r} under {programs_dir}"
    return outcomes, errors


def report_text(outcomes: dict[str, Outcome], errors: dict[str, str], out) -> None:
    scores = tally(outcomes)
    print(f"{len(outcomes)} programs scored, {len(errors)} not scored\n", file=out)
    print(format_table(scores), file=out)
    sections = [
        ("Misses (expected, not found)",
         [f"{name}/{l.path}:{l.line} {l.code} -- {l.reason}" for name, o in outcomes.items() for l in o.misses]),
        ("False positives (marked safe, found)",
         [f"{name}/{l.path}:{l.line} {l.code} -- {l.reason}\n    torchlint: {f.message}"
          for name, o in outcomes.items() for l, f in o.false_positives]),
        ("Unlabelled findings (read these)",
         [f"{name}/{f.path}:{f.line} {f.code} {f.message}" for name, o in outcomes.items() for f in o.unlabelled]),
        ("Programs not scored", [f"{name}: {why}" for name, why in errors.items()]),
    ]
    for title, lines in sections:
        print(f"\n## {title}: {len(lines)}", file=out)
        for line in lines:
            print(f"  {line}", file=out)


def report_json(outcomes: dict[str, Outcome], errors: dict[str, str]) -> dict:
    scores = tally(outcomes)
    rules = {}
    for code, s in list(scores.items()) + [("all", total(scores))]:
        rules[code] = {**asdict(s), "precision": s.precision, "recall": s.recall}
    return {
        "rules": rules,
        "programs": {
            name: {
                "misses": [asdict(l) for l in o.misses],
                "false_positives": [{"label": asdict(l), "finding": asdict(f)} for l, f in o.false_positives],
                "hits": [asdict(l) for l in o.hits],
                "clean": [asdict(l) for l in o.clean],
                "unlabelled": [asdict(f) for f in o.unlabelled],
            }
            for name, o in outcomes.items()
        },
        "errors": errors,
    }


def scan_external(paths: list[Path], torchlint: list[str], timeout: float, show: int, as_json: bool, out):
    """Unlabelled findings per 1,000 .py files per rule on external trees."""
    results = {}
    for path in paths:
        if not path.is_dir():
            results[str(path)] = {"error": "not a directory"}
            continue
        files = sum(1 for p in path.rglob("*.py") if "__pycache__" not in p.parts)
        started = time.perf_counter()
        findings, error = run_torchlint(path.resolve(), torchlint, timeout)
        seconds = time.perf_counter() - started
        counts = {code: sum(1 for f in findings if f.code == code) for code in CORE_RULES}
        per_k = {code: (1000 * n / files if files else 0.0) for code, n in counts.items()}
        samples = {code: [asdict(f) for f in findings if f.code == code][:show] for code in CORE_RULES}
        results[str(path)] = {"files": files, "seconds": round(seconds, 1), "error": error,
                              "counts": counts, "per_1000_files": per_k, "samples": samples}
    if as_json:
        return results
    for path, r in results.items():
        print(f"\n# {path}", file=out)
        if r.get("error"):
            print(f"  error: {r['error']}", file=out)
            if "counts" not in r:
                continue
        print(f"  {r['files']} .py files, {r['seconds']} s", file=out)
        print("  | rule | findings | per 1,000 files |", file=out)
        print("  | --- | ---: | ---: |", file=out)
        for code in CORE_RULES:
            print(f"  | {code} | {r['counts'][code]} | {r['per_1000_files'][code]:.1f} |", file=out)
        for code in CORE_RULES:
            for f in r["samples"][code]:
                print(f"    {f['path']}:{f['line']} {code} {f['message']}", file=out)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=Path, default=PROGRAMS, help="labelled programs dir")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="score only these programs")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per torchlint run")
    parser.add_argument("--torchlint", help="command to run torchlint (default: torchlint imported by this Python, with the checked folder kept off sys.path)")
    parser.add_argument("--corpus", nargs="+", type=Path, metavar="PATH",
                        help="external trees: findings per 1,000 files instead of the labelled score")
    parser.add_argument("--corpus-timeout", type=float, default=1800.0, help="seconds per external tree")
    parser.add_argument("--show", type=int, default=5, help="with --corpus: findings listed per rule")
    args = parser.parse_args(argv)
    torchlint = _torchlint_command(args.torchlint)

    if args.corpus:
        results = scan_external(args.corpus, torchlint, args.corpus_timeout, args.show, args.json, sys.stdout)
        if args.json:
            json.dump(results, sys.stdout, indent=2)
            print()
        return 0

    if not args.programs.is_dir():
        print(f"score.py: no programs folder at {args.programs}", file=sys.stderr)
        return 0
    outcomes, errors = score_corpus(args.programs, torchlint, args.timeout, args.only)
    if args.json:
        json.dump(report_json(outcomes, errors), sys.stdout, indent=2)
        print()
    else:
        report_text(outcomes, errors, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
