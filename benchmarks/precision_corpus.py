#!/usr/bin/env python3
"""Default-on precision on big public libraries and frameworks nobody here wrote.

The corpus is CORPUS below: 21 public trees at fixed commits, most of them libraries and
frameworks with their test suites. None of their code is stored here; only the labels
(`precision/labels.jsonl`): one judged finding a line, keyed by tree, path, line and rule,
with the reviewer's label ("right" or "wrong") and reason. The reviewers were helpers that
had not seen the rules' code: each got the finding, the file and its callers, and the
question "would the authors of this code thank us for this finding?" (see
`precision/README.md` for the brief).

    prepare  --mirrors DIR --trees DIR   extract each tree's Python sources and project files
                                         from bare git mirrors (DIR/owner+name/repo), or clone
                                         it when the mirror is missing
    findings --trees DIR --out FILE      run `torchlint check` (default rules) on each tree
    sample   --findings FILE [--per-rule N --seed S]
                                         print unjudged findings to judge: up to N per rule
                                         (all when fewer), round-robin over trees, seeded
    score    --findings FILE [--json]    per-rule precision with a 95 % Wilson interval from the
                                         labels that match current findings, the precision
                                         weighted by population, and what is new and unjudged

A label whose finding is gone (the rule was narrowed) no longer counts; a finding without a
label is "unjudged" and listed. Always exits 0 unless the command line is wrong.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
LABELS = HERE / "precision" / "labels.jsonl"


@dataclass(frozen=True)
class Tree:
    name: str  # owner+repo, the mirror's folder name
    commit: str
    kind: str


CORPUS: tuple[Tree, ...] = (
    Tree("microsoft+DeepSpeed", "38327e07f6cd39b63418f60cedd1651b0be3e7c3", "distributed training"),
    Tree("NVIDIA+Megatron-LM", "d98e8a64ddf34856e74b24714e3bedb2f5a39553", "LLM training"),
    Tree("pytorch+torchtune", "bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1", "fine-tuning recipes"),
    Tree("huggingface+peft", "5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40", "fine-tuning library"),
    Tree("huggingface+accelerate", "16cb6eb80dd9aa8b4df1a63ef57863e455d53b83", "distributed launcher"),
    Tree("Lightning-AI+pytorch-lightning", "7f0c3436cd3f6ad3753125672024fc415cbcb414", "training framework"),
    Tree("Lightning-AI+litgpt", "26857050fe3ff627cd714fe92f5838f51a3d5efa", "LLM recipes"),
    Tree("pytorch+ignite", "de08e799cfb55a6cf4aa778575d6bad725385453", "training framework"),
    Tree("skorch-dev+skorch", "5db0ddc962117a2c3a646910ecd2e70253ff8e87", "training framework"),
    Tree("Project-MONAI+MONAI", "d388d1c6fec8cb3a0eebee5b5a0b9776ca59ca83", "medical imaging"),
    Tree("pyg-team+pytorch_geometric", "5c6461b2305ad068a6d61165b3c55852a11aaa41", "graph learning"),
    Tree("speechbrain+speechbrain", "9c826ef3937bac885c8a6ca86c6889a30f256fb5", "speech"),
    Tree("facebookresearch+fairseq", "3d262bb25690e4eb2e7d3c1309b1e9c406ca4b99", "sequence models"),
    Tree("facebookresearch+detectron2", "02b5c4e295e990042a714712c21dc79b731e8833", "detection"),
    Tree("huggingface+pytorch-image-models", "aa4b5850c1543fa488abf260f18390eda46cf85d", "vision models"),
    Tree("kornia+kornia", "b4f5a78a13891c7ac4c1cd9695941380273e981d", "differentiable vision"),
    Tree("pytorch+rl", "ae9719f17b1517af5c2523a36c4616f003ee55cf", "reinforcement learning"),
    Tree("DLR-RM+stable-baselines3", "e05d2dbe6eda0acd0ef2e316e3e4065677add3eb", "reinforcement learning"),
    Tree("pyro-ppl+pyro", "ff6ae1c9572591791aae8842bcd702fcf0b46fd6", "probabilistic programming"),
    Tree("cornellius-gp+gpytorch", "7c4ec80f0f05cf530348a8a8972d67a11dd26ed2", "Gaussian processes"),
    Tree("pytorch+examples", "77f55b912142e11fcfdf5b530231fb9c52f181e8", "example scripts"),
)

# What `prepare` extracts: the sources and what tells torchlint about the project.
_KEPT_NAMES = {"pyproject.toml", "setup.cfg", "setup.py", ".gitignore"}


def _kept(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return path.endswith(".py") or name in _KEPT_NAMES or (
        name.startswith("requirements") and name.endswith(".txt"))


def prepare(mirrors: Path, trees: Path) -> None:
    for tree in CORPUS:
        target = trees / tree.name
        if target.exists():
            print(f"{tree.name}: already there")
            continue
        git_dir = mirrors / tree.name / "repo"
        if not git_dir.exists():
            owner, repo = tree.name.split("+", 1)
            git_dir = trees / f".{tree.name}.git"
            subprocess.run(["git", "clone", "--bare", "--filter=blob:limit=1m",
                            f"https://github.com/{owner}/{repo}", str(git_dir)], check=True)
        listing = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", tree.commit],
                                 check=True, capture_output=True).stdout.split(b"\0")
        count = 0
        for entry in filter(None, listing):
            meta, path = entry.split(b"\t", 1)
            mode, kind, blob = meta.split()
            text_path = path.decode("utf-8", "surrogateescape")
            if kind != b"blob" or mode == b"120000" or not _kept(text_path):
                continue
            data = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "blob", blob.decode()],
                                  capture_output=True).stdout
            out = target / text_path
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
            count += 1
        print(f"{tree.name}: {count} files")


def findings(trees: Path, out: Path, extend_select: str | None = None) -> None:
    """Every finding of the default rules (plus `extend_select`, to measure an opt-in rule
    such as TL303 on the same trees) on each tree of the corpus."""
    every: list[dict] = []
    extra = ["--extend-select", extend_select] if extend_select else []
    for tree in CORPUS:
        root = trees / tree.name
        run = subprocess.run(
            [sys.executable, "-m", "torchlint", "check", ".", "--output-format", "json", "--exit-zero",
             "--no-cache", *extra], cwd=root, capture_output=True, text=True, timeout=3600)
        found = json.loads(run.stdout or "[]")
        for finding in found:
            every.append({"tree": tree.name, "path": finding["filename"], "line": finding["location"]["row"],
                          "rule": finding["code"], "message": finding["message"]})
        print(f"{tree.name}: {len(found)} findings", file=sys.stderr)
    out.write_text(json.dumps(every, indent=1) + "\n")


def _key(item: dict) -> tuple[str, str, int, str]:
    return item["tree"], item["path"], int(item["line"]), item["rule"]


def _labels() -> dict[tuple[str, str, int, str], dict]:
    if not LABELS.exists():
        return {}
    rows = [json.loads(line) for line in LABELS.read_text().splitlines() if line.strip()]
    return {_key(row): row for row in rows}


def _unjudged_sample(found: list[dict], labels: dict, per_rule: int, seed: int) -> list[dict]:
    """Up to `per_rule` findings per rule over the whole corpus (all when fewer), counting those
    already judged, taken round-robin over the trees so one tree cannot fill a rule's sample."""
    by_rule: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for item in found:
        by_rule[item["rule"]][item["tree"]].append(item)
    chosen = []
    for rule in sorted(by_rule):
        queues = []
        for tree in sorted(by_rule[rule]):
            items = sorted(by_rule[rule][tree], key=_key)
            random.Random(f"{seed}:{rule}:{tree}").shuffle(items)
            queues.append(items)
        picked: list[dict] = []
        while len(picked) < per_rule and any(queues):
            for queue in queues:
                if queue and len(picked) < per_rule:
                    picked.append(queue.pop(0))
        chosen += [item for item in picked if _key(item) not in labels]
    return chosen


def wilson(right: int, judged: int, z: float = 1.96) -> tuple[float, float]:
    if judged == 0:
        return 0.0, 1.0
    share = right / judged
    centre = share + z * z / (2 * judged)
    spread = z * math.sqrt(share * (1 - share) / judged + z * z / (4 * judged * judged))
    scale = 1 + z * z / judged
    return (centre - spread) / scale, (centre + spread) / scale


def score(found: list[dict], as_json: bool) -> None:
    labels = _labels()
    population = Counter(item["rule"] for item in found)
    right: Counter = Counter()
    judged: Counter = Counter()
    unjudged = []
    for item in found:
        label = labels.get(_key(item))
        if label is None:
            unjudged.append(item)
            continue
        judged[item["rule"]] += 1
        right[item["rule"]] += label["label"] == "right"
    rows = []
    for rule in sorted(population):
        low, high = wilson(right[rule], judged[rule])
        share = right[rule] / judged[rule] if judged[rule] else None
        rows.append({"rule": rule, "findings": population[rule], "judged": judged[rule],
                     "right": right[rule], "precision": share, "wilson_low": low, "wilson_high": high})
    weighted_rules = [row for row in rows if row["precision"] is not None]
    weight = sum(row["findings"] for row in weighted_rules)
    weighted = sum(row["precision"] * row["findings"] for row in weighted_rules) / weight if weight else None
    per_tree = Counter(item["tree"] for item in found)
    if as_json:
        print(json.dumps({"rules": rows, "weighted_precision": weighted, "findings": len(found),
                          "per_tree": per_tree, "unjudged": len(unjudged)}, indent=1))
        return
    print(f"{'rule':7} {'findings':>8} {'judged':>6} {'right':>5} {'precision':>9}  95% Wilson")
    for row in rows:
        share = "-" if row["precision"] is None else f"{row['precision']:.2f}"
        print(f"{row['rule']:7} {row['findings']:8} {row['judged']:6} {row['right']:5} {share:>9}"
              f"  [{row['wilson_low']:.2f}, {row['wilson_high']:.2f}]")
    print(f"\n{len(found)} findings in {len(per_tree)} trees; weighted precision "
          f"{'-' if weighted is None else f'{weighted:.3f}'} over the judged rules")
    unused = set(labels) - {_key(item) for item in found}
    print(f"{len(unused)} labels match no current finding (the rule no longer reports them)")
    if unjudged:
        print(f"\n{len(unjudged)} findings are unjudged:")
        for item in unjudged[:200]:
            print(f"  {item['tree']}/{item['path']}:{item['line']} {item['rule']} {item['message'][:100]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    prep = commands.add_parser("prepare")
    prep.add_argument("--mirrors", type=Path, required=True)
    prep.add_argument("--trees", type=Path, required=True)
    find = commands.add_parser("findings")
    find.add_argument("--trees", type=Path, required=True)
    find.add_argument("--out", type=Path, required=True)
    find.add_argument("--extend-select", help="opt-in rules to measure too, e.g. TL303")
    samp = commands.add_parser("sample")
    samp.add_argument("--findings", type=Path, required=True)
    samp.add_argument("--per-rule", type=int, default=25)
    samp.add_argument("--seed", type=int, default=0)
    scor = commands.add_parser("score")
    scor.add_argument("--findings", type=Path, required=True)
    scor.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "prepare":
        prepare(args.mirrors, args.trees)
    elif args.command == "findings":
        findings(args.trees, args.out, args.extend_select)
    else:
        found = json.loads(args.findings.read_text())
        if args.command == "sample":
            print(json.dumps(_unjudged_sample(found, _labels(), args.per_rule, args.seed), indent=1))
        else:
            score(found, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
