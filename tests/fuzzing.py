"""Fuzzing `check` and `--fix --unsafe-fixes`: shared by tests/test_fuzz.py (a few examples in
CI) and benchmarks/fuzz.py (minutes of them, with figures).

Sources come from hypothesmith (syntactically valid Python from the grammar) and are then
mutated: torch-flavoured snippets spliced in at random lines with the indentation found
there, lines and bytes deleted or duplicated. What must hold for every input:

- checking raises nothing and no rule crashes (no TL001);
- a fixed file still parses, and checking and fixing it again changes nothing.
"""

from __future__ import annotations

import ast
import contextlib
import os
import random
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from torchlint.config import Config
from torchlint.pluginmanager import make_plugin_manager, rule_registry
from torchlint.selection import resolve
from torchlint.static.engine import StaticEngine

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"

SNIPPETS = (
    "loss = F.cross_entropy(F.softmax(logits, dim=1), y)\n",
    "loss = nn.CrossEntropyLoss()(torch.softmax(out, -1), target)\n",
    "loss = F.nll_loss(out, y)\n",
    "state = torch.load(p)\n",
    "model.load_state_dict(torch.load('ckpt.pt'))\n",
    "x.add_(1)\n",
    "w.data.mul_(2)\n",
    "x = x.cuda()\n",
    "model.cuda()\n",
    "t = torch.zeros(3, 4)\n",
    "t = torch.ones(n) + x\n",
    "y = torch.log(1 + x)\n",
    "z = torch.exp(x) - 1\n",
    "a = x.numpy()\n",
    "u = torch.solve(b, A)\n",
    "v = torch.Tensor(3)\n",
    "loader = torch.utils.data.DataLoader(ds, batch_size=4)\n",
    "total_loss += loss\n",
    "import pdb; pdb.set_trace()\n",
    "with torch.cuda.amp.autocast():\n    y = model(x)\n",
    "class Net(nn.Module):\n    def forward(self, x):\n        h = torch.zeros(4)\n        return F.softmax(x + h, dim=1)\n",
    "for x, y in loader:\n    out = model(x)\n    loss = F.cross_entropy(out.softmax(1), y)\n    loss.backward()\n    opt.step()\n",
    "torch.save(model.state_dict(), p)\n",
    "def step(x):\n    x.relu_()\n    return x.sum()\n",
)


@dataclass
class Figures:
    tried: int = 0
    parsed: int = 0
    crashes: list[tuple[str, str]] = field(default_factory=list)  # (source, what)
    fix_failures: list[tuple[str, str]] = field(default_factory=list)
    #: fixes the runner refused because their result would not parse (nothing is written,
    #: but the rule built a bad fix)
    rejected: list[tuple[str, str]] = field(default_factory=list)
    fixed_files: int = 0


def make_engine(root: Path) -> StaticEngine:
    config = Config(root=root, respect_gitignore=False)
    pm = make_plugin_manager()
    rules = rule_registry(pm)
    enabled = resolve(rules, ["ALL"], (), (), where="fuzz")
    return StaticEngine(config, pm, rules, enabled)


def _indent_at(lines: list[str], index: int) -> str:
    """The indentation a line inserted before `lines[index]` should have to sit in that block."""
    for line in reversed(lines[:index]):
        if line.strip():
            indent = re.match(r"[ \t]*", line).group()
            return indent + "    " if line.rstrip().endswith(":") else indent
    return ""


def mutate(source: str, rnd: random.Random) -> str:
    lines = source.splitlines(True)
    for _ in range(rnd.randint(1, 6)):
        operation = rnd.choice(("splice", "splice", "splice", "delete_line", "duplicate_line", "delete_byte", "duplicate_byte"))
        index = rnd.randint(0, len(lines))
        if operation == "splice":
            indent = _indent_at(lines, index)
            snippet = "".join(indent + line for line in rnd.choice(SNIPPETS).splitlines(True))
            lines.insert(index, snippet)
        elif lines and operation == "delete_line":
            del lines[min(index, len(lines) - 1)]
        elif lines and operation == "duplicate_line":
            line = lines[min(index, len(lines) - 1)]
            lines.insert(index, line)
        elif lines:
            text = "".join(lines)
            if text:
                at = rnd.randrange(len(text))
                text = text[:at] + text[at + 1 :] if operation == "delete_byte" else text[:at] + text[at] + text[at:]
            lines = text.splitlines(True)
    return HEADER + "".join(lines)


def parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def check_one(engine: StaticEngine, folder: Path, source: str, figures: Figures) -> None:
    """Check and fix `source` as the command line would, recording what went wrong."""
    from torchlint.fix.runner import fix_findings

    figures.tried += 1
    with _cwd(folder):  # findings name files relative to the folder, as on the command line
        _check_one(engine, folder, source, figures)


@contextlib.contextmanager
def _cwd(folder: Path):
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def _check_one(engine: StaticEngine, folder: Path, source: str, figures: Figures) -> None:
    from torchlint.fix.runner import fix_findings

    path = folder / "case.py"
    try:
        data = source.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from the generator: not a file anyone has
        return
    path.write_bytes(data)
    was_valid = parses(source)
    figures.parsed += was_valid
    try:
        result = engine.check_paths([path], cwd=folder)
        crashed = [f.message for f in result.findings if f.code == "TL001"]
        if crashed:
            figures.crashes.append((source, "; ".join(crashed)))
            return
        outcome = fix_findings(engine, result.findings, unsafe=True, write=True)
    except Exception as exc:
        figures.crashes.append((source, f"{type(exc).__name__}: {exc}"))
        return
    if not outcome.fixed:
        rejected = [reason for file_fix in outcome.files for reason in file_fix.rejected]
        if rejected and was_valid:
            figures.rejected.append((source, "; ".join(rejected)))
        return
    figures.fixed_files += 1
    fixed = path.read_text(encoding="utf-8")
    problem = None
    if was_valid and not parses(fixed):
        problem = "the fixed file no longer parses"
    else:
        try:
            again = fix_findings(engine, engine.check_paths([path], cwd=folder).findings, unsafe=True, write=True)
        except Exception as exc:
            problem = f"re-fixing raised {type(exc).__name__}: {exc}"
        else:
            if again.fixed:
                problem = f"not idempotent: a second --fix changed it again ({again.files[0].diff[:400]})"
    rejected = [reason for file_fix in outcome.files for reason in file_fix.rejected]
    if rejected and was_valid:
        figures.rejected.append((source, "; ".join(rejected)))
    if problem:
        figures.fix_failures.append((source, problem))
