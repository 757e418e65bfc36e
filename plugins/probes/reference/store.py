"""The reference file: plain JSON, written atomically, read and checked before any use.

No torch here: the parent reads a `--reference` file while it parses the command line (a
missing or broken file is a usage error before the program runs), and the child reads it
again when the probe installs.

Layout (``FORMAT``, ``VERSION``)::

    {"format": "torchlint-reference", "version": 1,
     "program": {"script": "train.py", "torch": "2.13.0", "device": "cpu"},
     "sampling": {"first": 8, "every": 10},
     "parameters": ["Net.fc1.weight", ...],          # the order of each step's "params" rows
     "shapes": {"Net.fc1.weight": [16, 8], ...},
     "steps": [{"step": 1, "optimizer": "SGD#0", "site": ["train.py", 31],
                "events": [["zero_grad:SGD#0", "train.py", 27], ...],
                "params": [[holder, requires_grad, grad, changed, dtype] or null, ...],
                "lr": [0.1], "loss": 2.31, "forward": {...}}, ...]}
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

FORMAT = "torchlint-reference"
VERSION = 1


class ReferenceError(Exception):
    """The file is missing, not JSON, or not a reference this version can read."""


#: A reference of a long run with a big model is a few MB; a file far past this is not one.
MAX_REFERENCE_BYTES = 512 * 1024 * 1024


def load(path: str) -> dict[str, Any]:
    from torchlint.bounded_read import Unreadable, load_json

    if not os.path.lexists(path):
        raise ReferenceError(f"{path}: no such file (record one with `torchlint run TARGET --save-reference {path}`)")
    try:
        document = load_json(path, MAX_REFERENCE_BYTES)
    except Unreadable as exc:
        shape = "not a JSON file" if exc.reason.startswith("not JSON") else exc.reason
        raise ReferenceError(f"{path}: {shape}; a reference is what `--save-reference` writes ({exc.reason})") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ReferenceError(f"{path}: JSON, but not a torchlint reference (no \"format\": \"{FORMAT}\")")
    if document.get("version") != VERSION:
        raise ReferenceError(f"{path}: reference format version {document.get('version')!r}; this torchlint reads version {VERSION}: "
                             "record it again")
    if not isinstance(document.get("steps"), list) or not isinstance(document.get("parameters"), list):
        raise ReferenceError(f"{path}: a torchlint reference without its steps or parameters (cut short?); record it again")
    return document


def save(path: str, document: dict[str, Any]) -> None:
    """Written next to its final place and renamed over it: a run killed while writing
    leaves the old reference whole, never half a file."""
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".torchlint-reference-", suffix=".json", dir=folder)
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(temporary, 0o666 & ~mask)  # as any file the user writes, not mkstemp's 0600
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(document, stream, separators=(",", ":"), allow_nan=False)
            stream.write("\n")
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def document(program: dict[str, Any], records: list[dict[str, Any]], parameters: list[str], modules: dict[str, list[str]],
             optimizers: dict[str, str], sampling: dict[str, int], shapes: dict[str, list[int]]) -> dict[str, Any]:
    """The file's content: each step's parameter rows as a list in the order of
    ``parameters`` (a name is written once, not once per step)."""
    index = {name: i for i, name in enumerate(parameters)}
    steps = []
    for record in records:
        rows: list[Any] = [None] * len(parameters)
        for name, row in record["rows"].items():
            rows[index[name]] = row
        steps.append({**{k: v for k, v in record.items() if k != "rows"}, "params": rows})
    return {"format": FORMAT, "version": VERSION, "program": program, "sampling": sampling, "optimizers": optimizers,
            "modules": modules, "parameters": parameters, "shapes": shapes, "steps": steps}


def records_of(document: dict[str, Any]) -> dict[str, Any]:
    """What ``relations.Relations`` reads: each step's rows by parameter name again."""
    parameters = document["parameters"]
    records = []
    for step in document["steps"]:
        rows = {name: row for name, row in zip(parameters, step.get("params") or ()) if row is not None}
        records.append({**{k: v for k, v in step.items() if k != "params"}, "rows": rows})
    return {"records": records, "optimizers": document.get("optimizers") or {}, "modules": document.get("modules") or {},
            "program": document.get("program") or {}, "shapes": document.get("shapes") or {}}
