"""What to run: a script (``train.py``) or an entry (``models.py:build``), checked up front.

Checking here (exists, is a file, compiles) turns the common mistakes into a one-line usage
error before a child process and a torch import are paid for. Compiling is not importing:
none of the user's code runs in the parent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class TargetError(Exception):
    """The target cannot be run; the message says why (a usage error, exit code 2)."""


@dataclass(frozen=True)
class Target:
    path: Path  # absolute
    entry: str | None = None  # function returning (model, example_inputs)

    @property
    def display(self) -> str:
        return f"{self.path.name}:{self.entry}" if self.entry else self.path.name


def parse_target(text: str, cwd: Path) -> Target:
    path_text, entry = text, None
    head, sep, tail = text.rpartition(":")
    if sep and _IDENTIFIER.match(tail) and not (cwd / text).exists():
        path_text, entry = head, tail
    path = (cwd / path_text).absolute()
    if not path.exists():
        raise TargetError(f"no such file: {path_text}")
    if path.is_dir():
        raise TargetError(f"{path_text} is a directory; give the script to run (e.g. {path_text}/train.py)")
    _check_python(path, path_text)
    return Target(path, entry)


def _check_python(path: Path, shown: str) -> None:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TargetError(f"cannot read {shown}: {exc.strerror or exc}") from None
    if path.suffix.lower() == ".ipynb":
        _check_notebook(data, path, shown)
        return
    if b"\x00" in data:
        raise TargetError(f"{shown} is not a Python file (it contains NUL bytes)")
    try:
        compile(data, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise TargetError(f"{shown} is not valid Python: {exc.msg} (line {exc.lineno})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise TargetError(f"{shown} is not a Python file: {exc}") from None


def _check_notebook(data: bytes, path: Path, shown: str) -> None:
    """A notebook runs as its code cells joined, magics skipped: they must compile."""
    from torchlint.notebook import Notebook, NotebookError

    try:
        notebook = Notebook.parse(data)
    except NotebookError as exc:
        raise TargetError(f"{shown}: {exc}") from None
    if notebook.broken:  # "Run All" stops at the first cell that fails
        cell = notebook.broken[0]
        raise TargetError(f"{shown} is not valid Python: {cell.message} (cell {cell.number}, line {cell.line})")
    try:
        compile(notebook.source, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        cell, line = notebook.cell_position(exc.lineno or 1)
        raise TargetError(f"{shown} is not valid Python: {exc.msg} (cell {cell}, line {line})") from None
