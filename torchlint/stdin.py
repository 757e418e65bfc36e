"""`torchlint check -`: source read from stdin (an editor's buffer, a pipe), named by
`--stdin-filename` as ruff names it. Nothing is written to disk: with `--fix` the fixed
source goes to stdout, with `--diff` the diff does."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sys

from torchlint.static.source import MAX_FILE_BYTES, decode_file

if TYPE_CHECKING:
    from torchlint.fix.runner import FixOutcome
    from torchlint.static.cache import Cache
    from torchlint.static.engine import CheckResult, StaticEngine

#: The name of stdin's source when `--stdin-filename` is not given.
STDIN_NAME = "-"


def read_stdin() -> tuple[bytes | None, str | None]:
    """(the bytes, None) or (None, why they cannot be checked); as big a source as a file may be."""
    try:
        data = _binary(sys.stdin).read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return None, f"cannot read stdin: {exc.strerror or exc}"
    if len(data) > MAX_FILE_BYTES:
        return None, f"stdin holds more than {MAX_FILE_BYTES // 1_000_000} MB; not read"
    return data, None


def check_stdin(engine: StaticEngine, name: str, data: bytes | None, problem: str | None, *, cache: Cache | None = None, jobs: int = 1) -> CheckResult:
    """Check stdin's source as the file `name`; the rest of that file's project comes from
    `cache` when fresh (stdin's own source is never cached)."""
    if data is None:
        from torchlint.static.engine import CheckResult
        from torchlint.static.engine_rules import FileNotChecked, engine_finding

        finding = engine_finding(FileNotChecked, name, f"cannot check: {problem}")
        return CheckResult(findings=[finding], files_checked=1, enabled=engine.enabled, checked_paths={name})
    return engine.check_stdin(name, data, cache=cache, jobs=jobs)


def fix_stdin(engine: StaticEngine, name: str, data: bytes | None, result: CheckResult, *, unsafe: bool) -> tuple[FixOutcome, bytes]:
    """Fix stdin's source in memory: (what was done, the bytes to print). Source that needs
    no fix, or cannot be decoded, is printed back as it came."""
    from torchlint.fix.runner import FixOutcome, fix_text, wanted

    source = decode_file(name, data) if data is not None else None
    if source is None or source.text is None or not any(wanted(f, unsafe) for f in result.findings):
        return FixOutcome(), data or b""
    file_fix, text = fix_text(engine, name, source.text, unsafe=unsafe)
    if text == source.text:
        return FixOutcome([file_fix]), data
    file_fix.notebook = source.notebook
    try:
        return FixOutcome([file_fix]), source.encode(text)  # a notebook: its JSON, cells fixed
    except ValueError as exc:  # NotebookError: the fixed code no longer fits the cells
        from torchlint.fix.runner import Rejection

        file_fix.applied, file_fix.diff = [], ""
        file_fix.rejected.append(Rejection(f"the fixes cannot be written back into the notebook: {exc}; left unchanged"))
        return FixOutcome([file_fix]), data


def write_source(data: bytes) -> None:
    """The (fixed) source on stdout, byte for byte in its own encoding."""
    sys.stdout.flush()
    stream = _binary(sys.stdout)
    stream.write(data)
    stream.flush()


def _binary(stream):
    """The byte stream under a text stream: bytes in, bytes out, no newline translation and
    no re-encoding of a latin-1 file."""
    return getattr(stream, "buffer", stream)
