#!/usr/bin/env python3
"""Score torchlint on two peers' own test suites, read from their published sources.

Nothing of either peer is stored in this repository: both are fetched into a temporary
folder at run time and deleted afterwards (`--keep DIR` keeps them for a rerun).

TorchFix (pytorch-labs/torchfix)
    Its checker fixtures are `tests/fixtures/**/checker/NAME.py`, each with `NAME.txt`
    listing what TorchFix must report, one `LINE:COL TORxxx message` a line. They are in its
    git repository only (the 0.7.0 sdist and wheel ship no fixtures), so `--torchfix-src`
    takes a clone, a bare git directory or a checkout; without it the script clones the
    repository's default branch (the fixtures there include three checkers merged after the
    0.7.0 release that torchlint has: TOR108 logsumexp, TOR402 zero_grad, the amp APIs).
    A line counts once per peer code; it is flagged when torchlint reports one of the mapped
    codes (TORCHFIX_MAP) on it. Unflagged lines we chose not to flag carry their reason
    (TORCHFIX_DELIBERATE).

torch-preflight (a libcst linter, codes TG001-TG014)
    Its rule tests are inline snippets in `tests/test_rules.py` passed to `analyze()` /
    `codes()`, with asserts on the codes (no line labels). The script downloads its sdist,
    installs the released package in a throwaway venv, runs every test there with a recording
    `conftest` (`_preflight_harness.py`) and takes torch-preflight's own findings on each
    snippet of a passing test as the expected lines: its tests pass on exactly that output.
    A snippet of a test named `test_tgNNN_*` is scored for TGNNN only; a snippet where the
    peer reports nothing for TGNNN is a hard negative (torchlint must stay quiet too).
    `examples/bad_train.py` is scored on the lines the peer reports.

Prints, per peer and per rule, expected lines, lines flagged, and every miss (with the
reason where we disagree with the peer); for torch-preflight also its hard negatives that
torchlint flags. Always exits 0 unless the command line is wrong: a benchmark, not a test.

    python benchmarks/peer_suites.py --torchfix-src /path/to/torchfix [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
TORCHFIX_REPO = "https://github.com/pytorch-labs/torchfix"
PREFLIGHT_VERSION = "0.5.0"

# TorchFix code -> the torchlint codes that report the same problem. A TorchFix code is one
# message family; TOR101/TOR103 (deprecated function / its import) are split by torchlint
# into the general rule and dedicated ones with fixes (functorch, torch.cuda.amp).
TORCHFIX_MAP: dict[str, tuple[str, ...]] = {
    "TOR001": ("TL501",),  # removed function (solve, symeig, ...)
    "TOR004": ("TL501",),  # its import
    "TOR002": ("TL104",),  # require_grad typo
    "TOR003": ("TL105",),  # checkpoint without use_reentrant
    "TOR101": ("TL502", "TL503", "TL504"),  # deprecated function / functorch / cuda.amp
    "TOR103": ("TL502", "TL503", "TL504"),  # their imports
    "TOR102": ("TL302",),  # torch.load without weights_only
    "TOR104": ("TL508",),  # private default_collate / default_convert
    "TOR105": ("TL508",),  # their import
    "TOR106": ("TL401",),  # log(1 + x)
    "TOR107": ("TL402",),  # exp(x) - 1
    "TOR108": ("TL509",),  # log(sum(exp(x)))
    "TOR201": ("TL505",),  # torchvision pretrained=
    "TOR202": ("TL506",),  # transforms.v2.ToTensor
    "TOR203": ("TL507",),  # import torchvision.X as X (off by default in both tools)
    "TOR401": ("TL405",),  # DataLoader without num_workers (off by default in both tools)
    "TOR402": ("TL403",),  # zero_grad(set_to_none=False)
    "TOR901": (),  # torch.library.Library in PyTorch's own test files: no torchlint rule
}

# (fixture stem, line) -> why torchlint does not flag a line TorchFix expects.
_IMPORT_FIX_MIGRATES = (
    "a call of a name imported from the private module: torchlint reports the import (line 4 or 7) "
    "with a safe fix to the public module, which migrates every use; reporting each call again "
    "would be one problem reported N times"
)
TORCHFIX_DELIBERATE: dict[tuple[str, int], str] = {
    ("default_collate_convert", 5): _IMPORT_FIX_MIGRATES,
    ("default_collate_convert", 8): _IMPORT_FIX_MIGRATES,
    ("scoped_library", 3): (
        "TOR901 is an internal check for pytorch/pytorch's own test files (use "
        "`_scoped_library` so a test's operator registrations are undone); `torch.library."
        "Library` is the public API everywhere else, so torchlint has no rule for it"
    ),
}

# torch-preflight code -> torchlint codes. None: torchlint has no static rule for it.
PREFLIGHT_MAP: dict[str, tuple[str, ...] | None] = {
    "TG001": ("TL601",),  # tensor stored with its graph
    "TG002": ("TL604",),  # evaluation forward without no_grad (off by default)
    "TG003": ("TL602",),  # backward/step in a loop without zero_grad
    "TG004": ("TL405",),  # DataLoader num_workers (pin_memory half: no rule; off by default)
    "TG005": ("TL101", "TL102"),  # softmax before CrossEntropyLoss, or before NLLLoss
    "TG006": ("TL106", "TL109"),  # sigmoid before BCELoss / BCEWithLogitsLoss (raw logits into BCELoss: no rule)
    "TG007": ("TL407",),  # device sync per element in a nested loop (off by default; TL734 at run time)
    "TG008": ("TL612",),  # partial seeding (off by default; no seeding at all: not flagged)
    "TG010": None,  # projected out-of-memory (a VRAM estimator)
    "TG011": ("TL611",),  # eval() in an epoch loop with no train()
    "TG012": ("TL808",),  # training DataLoader under DDP without DistributedSampler
    "TG013": ("TL406",),  # loop-invariant host-to-device copy in the loop
    "TG014": ("TL610",),  # gradient accumulation without dividing the loss
}

# (test name, peer code) -> why torchlint deliberately does not flag that expected line
# (or reports the same bug elsewhere). Each was read; see benchmarks/README.md.
_UNSEEDED = (
    "a file that seeds nothing made a choice (the launcher often seeds; the peer itself rates "
    "it a note); TL612 flags a file that seeds some generators and draws from another"
)
_EVAL_LOADER = (
    "an evaluation loader without a sampler makes every rank evaluate everything: slower, "
    "not wrong (the peer rates it a warning too); TL808 flags training loaders"
)
PREFLIGHT_DISAGREE: dict[tuple[str, str], str] = {
    ("test_tg001_returning_a_bare_container_is_not_evidence_of_a_deferred_backward", "TG001"): (
        "a collecting function with no backward pass and no optimizer: its caller may run it "
        "under no_grad, or back-propagate the returned list"
    ),
    ("test_tg003_flags_backward_without_zero_grad", "TG003"): (
        "the same bug; TL602 reports it at `optimizer.step()`, the call that applies the "
        "accumulated gradients and names the optimizer nothing clears (a loop with two "
        "optimizers has one backward pass per loss and one step per optimizer), not at `backward()`"
    ),
    ("test_tg005_flags_softmax_layer_in_model", "TG005"): (
        "a module-level Sequential ending in Softmax and a CrossEntropyLoss, neither applied: "
        "attention pooling is written as `nn.Sequential(..., nn.Linear(d, 1), nn.Softmax(dim=1))` "
        "beside a classifier's loss, so the pair alone is no evidence; TL101 reports where "
        "probabilities reach the loss, in this file or through imports"
    ),
    ("test_tg006_flags_raw_logits_into_plain_bce", "TG006"): (
        "`model(x)` of a parameter is of unknown range (the peer's evidence is that the file "
        "applies no sigmoid, but a model defined in another file, the usual layout, may end in "
        "one); only its name says logits, and BCELoss raises at run time on inputs outside "
        "[0, 1]: not a silent bug"
    ),
    ("test_tg007_flags_explicit_synchronize_in_the_training_loop", "TG007"): (
        "`torch.cuda.synchronize()` written in a loop is there on purpose (timing a step, "
        "profiling); TL734 reports host synchronisations measured at run time instead"
    ),
    ("test_tg008_no_seeding_at_all_is_a_note", "TG008"): _UNSEEDED,
    ("test_tg012_warns_rather_than_errors_for_an_eval_loader", "TG012"): _EVAL_LOADER,
    ("test_tg012_separates_training_from_eval_loaders_in_one_file", "TG012"): _EVAL_LOADER,
    ("test_tg013_does_not_tell_you_to_hoist_a_random_draw", "TG013"): (
        "a fresh random draw each step is not loop-invariant; creating it with `device=` is "
        "other advice than TL406's (hoist what does not change)"
    ),
}
_EXAMPLE_DISAGREE: dict[tuple[int, str], str] = {
    (19, "TG005"): (
        "no call in the file gives a Classifier to train(), so no loss is seen receiving its "
        "output; TL101 reports where probabilities reach a loss (line 60 is flagged)"
    ),
    (45, "TG003"): "the same bug; TL602 reports it at `optimizer.step()` (line 46)",
    (84, "TG008"): _UNSEEDED,
}


# ----------------------------------------------------------------------------- torchlint


def torchlint_lines(files: dict[str, str], select: set[str]) -> dict[str, set[tuple[str, int]]]:
    """{path: {(code, line)}} for the in-memory `files`, checked as one project."""
    from torchlint.config import Config
    from torchlint.testing import check_sources

    with tempfile.TemporaryDirectory() as root:
        result = check_sources(files, select=sorted(select), config=Config(root=Path(root)))
    found: dict[str, set[tuple[str, int]]] = {path: set() for path in files}
    for finding in result.findings:
        found.setdefault(finding.path, set()).add((finding.code, finding.location.line))
    return found


# ----------------------------------------------------------------------------- TorchFix


@dataclass
class Expected:
    suite: str  # fixture stem or test name
    peer_code: str
    line: int
    text: str  # the source line, for the report
    flagged: bool = False
    elsewhere: list[int] = field(default_factory=list)  # torchlint's lines for it in the same snippet
    reason: str = ""  # why a miss is deliberate, or that no torchlint rule covers it


@dataclass
class PeerScore:
    peer: str
    expected: list[Expected] = field(default_factory=list)
    negatives: list[dict] = field(default_factory=list)  # hard negatives torchlint flagged
    negatives_total: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def torchfix_fixtures(source: Path, ref: str) -> dict[str, tuple[str, str]]:
    """{stem: (python text, expected text)} from a checkout, a clone or a bare git dir."""
    pattern = re.compile(r"tests/fixtures/.+/checker/([^/]+)\.py$")
    git_dir = source if (source / "objects").is_dir() else source / ".git"
    fixtures = {}
    if git_dir.is_dir():
        def show(path: str) -> str:
            return subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{ref}:{path}"], capture_output=True, text=True, check=True, timeout=60).stdout

        names = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--name-only", ref], capture_output=True, text=True, check=True, timeout=60).stdout.split()
        for name in names:
            match = pattern.search(name)
            if match and name[:-3] + ".txt" in names:
                fixtures[match.group(1)] = (show(name), show(name[:-3] + ".txt"))
        return fixtures
    for path in sorted(source.glob("tests/fixtures/**/checker/*.py")):
        expected = path.with_suffix(".txt")
        if expected.exists():
            fixtures[path.stem] = (path.read_text(), expected.read_text())
    return fixtures


def score_torchfix(fixtures: dict[str, tuple[str, str]]) -> PeerScore:
    score = PeerScore("TorchFix")
    select = {code for codes in TORCHFIX_MAP.values() for code in codes}
    for stem, (text, expected_text) in sorted(fixtures.items()):
        lines = text.splitlines()
        found = torchlint_lines({f"{stem}.py": text}, select)[f"{stem}.py"]
        seen = set()
        for entry in expected_text.splitlines():
            match = re.match(r"(\d+):\d+ (TOR\d+)", entry)
            if not match or (int(match.group(1)), match.group(2)) in seen:
                continue
            line, peer_code = int(match.group(1)), match.group(2)
            seen.add((line, peer_code))
            ours = TORCHFIX_MAP.get(peer_code, ())
            item = Expected(stem, peer_code, line, lines[line - 1].strip() if line <= len(lines) else "")
            item.flagged = any((code, line) in found for code in ours)
            item.reason = "" if item.flagged else TORCHFIX_DELIBERATE.get((stem, line), "")
            score.expected.append(item)
    return score


def fetch_torchfix(work: Path, source: str | None, ref: str) -> tuple[Path | None, str]:
    if source:
        return Path(source), ref
    target = work / "torchfix"
    if not target.exists():
        done = subprocess.run(["git", "clone", "--quiet", "--depth", "1", TORCHFIX_REPO, str(target)], capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            print(f"TorchFix: could not clone {TORCHFIX_REPO} ({done.stderr.strip()}); pass --torchfix-src", file=sys.stderr)
            return None, ref
    return target, "HEAD"


# ----------------------------------------------------------------------------- torch-preflight


def fetch_preflight(work: Path, version: str, python: str | None) -> tuple[Path, str]:
    """The unpacked sdist (for its tests) and an interpreter that has the package."""
    sdists = work / "preflight-sdist"
    unpacked = work / f"torch_preflight-{version}"
    if not unpacked.exists():
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:", f"torch-preflight=={version}", "-d", str(sdists)], check=True, timeout=600)
        with tarfile.open(next(sdists.glob("*.tar.gz"))) as archive:
            archive.extractall(work, filter="data")
    if python:
        return unpacked, python
    venv = work / "preflight-venv"
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", f"torch-preflight=={version}"], check=True, timeout=600)
    return unpacked, str(venv / "bin" / "python")


def preflight_records(unpacked: Path, python: str) -> dict:
    done = subprocess.run([python, str(HERE / "_preflight_harness.py"), str(unpacked)], capture_output=True, text=True, timeout=600, cwd=unpacked)
    if done.returncode != 0:
        raise SystemExit(f"torch-preflight harness failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def _family(test: str) -> str | None:
    match = re.match(r"test_tg(\d{3})_", test)
    return f"TG{match.group(1)}" if match else None


def score_preflight(records: dict) -> PeerScore:
    score = PeerScore("torch-preflight")
    outcomes = records["outcomes"]
    not_passed = sorted(name for name, outcome in outcomes.items() if outcome != "passed")
    if not_passed:
        score.notes.append(f"{len(not_passed)} peer tests did not pass in the harness and are not scored: " + ", ".join(f"{n} ({outcomes[n]})" for n in not_passed))
    unique: dict[tuple[str, str], str] = {}
    for snippet in records["snippets"]:
        family = _family(snippet["test"])
        if family is None or PREFLIGHT_MAP.get(family) is None or outcomes.get(snippet["test"]) != "passed":
            continue
        unique.setdefault((family, snippet["source"]), snippet["test"])
        snippet_lines = {line for code, line in snippet["findings"] if code == family}
        snippet.setdefault("_lines", snippet_lines)
    for snippet in records["snippets"]:
        family = _family(snippet["test"])
        if "_lines" not in snippet or unique.get((family, snippet["source"])) != snippet["test"]:
            continue
        unique.pop((family, snippet["source"]))  # score each distinct snippet once
        ours = set(PREFLIGHT_MAP[family] or ())
        found = torchlint_lines({"t.py": snippet["source"]}, ours)["t.py"]
        flagged_lines = {line for code, line in found if code in ours}
        lines = snippet["source"].splitlines()
        if not snippet["_lines"]:
            score.negatives_total[family] = score.negatives_total.get(family, 0) + 1
            if flagged_lines:
                score.negatives.append({"test": snippet["test"], "peer_code": family, "lines": sorted(flagged_lines), "text": [lines[n - 1].strip() for n in sorted(flagged_lines)]})
            continue
        for line in sorted(snippet["_lines"]):
            item = Expected(snippet["test"], family, line, lines[line - 1].strip())
            item.flagged = line in flagged_lines
            item.elsewhere = [] if item.flagged else sorted(flagged_lines - snippet["_lines"])
            item.reason = "" if item.flagged else PREFLIGHT_DISAGREE.get((snippet["test"], family), "")
            score.expected.append(item)
    return score


def score_example(records: dict) -> PeerScore:
    example = records["example"]
    score = PeerScore("torch-preflight examples/bad_train.py")
    select = {code for codes in PREFLIGHT_MAP.values() if codes for code in codes}
    found = torchlint_lines({"bad_train.py": example["source"]}, select)["bad_train.py"]
    lines = example["source"].splitlines()
    for code, line in sorted({(c, n) for c, n in example["findings"]}, key=lambda item: (item[1], item[0])):
        ours = PREFLIGHT_MAP.get(code)
        item = Expected("bad_train.py", code, line, lines[line - 1].strip())
        if ours is None:
            item.reason = "no torchlint rule"
        item.flagged = bool(ours) and any((c, line) in found for c in ours)
        if ours and not item.flagged:
            same_rule = {n for c, n in found if c in ours} - {n for c, n in example["findings"] if c == code}
            item.elsewhere = sorted(same_rule)
            item.reason = _EXAMPLE_DISAGREE.get((line, code), "")
        score.expected.append(item)
    return score


# ----------------------------------------------------------------------------- report


def print_score(score: PeerScore) -> None:
    print(f"\n## {score.peer}\n")
    print("| peer code | torchlint | expected lines | flagged | on another line | no rule or disagreed | recall |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    by_code: dict[str, list[Expected]] = {}
    for item in score.expected:
        by_code.setdefault(item.peer_code, []).append(item)
    mapping = {**TORCHFIX_MAP, **{k: v or () for k, v in PREFLIGHT_MAP.items()}}
    for code in sorted(by_code):
        items = by_code[code]
        flagged = sum(item.flagged for item in items)
        deliberate = sum(1 for item in items if not item.flagged and item.reason)
        other = sum(1 for item in items if not item.flagged and item.elsewhere)
        ours = ", ".join(mapping.get(code) or ()) or "-"
        print(f"| {code} | {ours} | {len(items)} | {flagged} | {other} | {deliberate} | {flagged / len(items):.0%} |")
    total = len(score.expected)
    flagged = sum(item.flagged for item in score.expected)
    deliberate = sum(1 for item in score.expected if not item.flagged and item.reason)
    other = sum(1 for item in score.expected if not item.flagged and item.elsewhere)
    if total:
        print(f"| all | | {total} | {flagged} | {other} | {deliberate} | {flagged / total:.0%} |")
        print(f"\nflagged, or not flagged for a stated reason: {flagged + deliberate} of {total} ({(flagged + deliberate) / total:.0%})")
        if other:
            print(f"not flagged there but reported by the mapped rule on another line of the same snippet (the same bug at another site): {other}")
    misses = [item for item in score.expected if not item.flagged]
    if misses:
        print("\nmisses:")
        for item in misses:
            why = f"  -- {item.reason}" if item.reason else ""
            if item.elsewhere:
                why += f"  (torchlint: line {', '.join(map(str, item.elsewhere))})"
            print(f"  {item.suite}:{item.line} {item.peer_code}  {item.text}{why}")
    if score.negatives_total:
        total_negatives = sum(score.negatives_total.values())
        print(f"\nhard negatives (snippets the peer keeps quiet on): {total_negatives}, flagged by torchlint: {len(score.negatives)}")
        for negative in score.negatives:
            print(f"  {negative['test']} {negative['peer_code']} lines {negative['lines']}: {' | '.join(negative['text'])}")
    for note in score.notes:
        print(f"\nnote: {note}")


def as_json(score: PeerScore) -> dict:
    return {
        "peer": score.peer,
        "expected": [vars(item) for item in score.expected],
        "negatives_flagged": score.negatives,
        "negatives_total": score.negatives_total,
        "notes": score.notes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--torchfix-src", help="TorchFix clone, bare git dir or checkout (default: clone it)")
    parser.add_argument("--torchfix-ref", default="HEAD", help="git ref to read the fixtures at (default HEAD)")
    parser.add_argument("--preflight-version", default=PREFLIGHT_VERSION)
    parser.add_argument("--preflight-python", help="an interpreter that already has torch-preflight installed")
    parser.add_argument("--only", choices=("torchfix", "preflight"))
    parser.add_argument("--keep", help="work folder to keep downloads in (reused by the next run)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="peer-suites-"))
    work.mkdir(parents=True, exist_ok=True)
    scores = []
    try:
        if args.only in (None, "torchfix"):
            source, ref = fetch_torchfix(work, args.torchfix_src, args.torchfix_ref)
            if source is not None:
                scores.append(score_torchfix(torchfix_fixtures(source, ref)))
        if args.only in (None, "preflight"):
            unpacked, python = fetch_preflight(work, args.preflight_version, args.preflight_python)
            records = preflight_records(unpacked, python)
            scores.append(score_preflight(records))
            scores.append(score_example(records))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        json.dump([as_json(score) for score in scores], sys.stdout, indent=2)
        print()
    else:
        for score in scores:
            print_score(score)
    return 0


if __name__ == "__main__":
    sys.exit(main())
