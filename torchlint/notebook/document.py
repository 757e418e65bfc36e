"""A Jupyter notebook as Python: its code cells joined into one module, a map from each
joined line back to (cell, line in the cell), and a writer that puts fixed code back.

The joined source is what every rule, the semantic model and the cache see, so a model
defined in one cell and trained in another is one module, and a notebook costs what its code
costs. Cells are joined in order with a comment line between them (so fixed text can be
split back into cells even when a fix changes a cell's line count); IPython magics become
one-line placeholders (`magics.py`), so cell line N is always joined line start + N - 1.

Cells are numbered as the notebook lists them, 1-based, markdown cells included: "cell 3" is
`cells[2]` of the file, the third cell from the top.
"""

from __future__ import annotations

import ast
import difflib
import json
from dataclasses import dataclass

from torchlint.notebook.jsonspans import SpanError, encode_source, raw_offset, source_spans
from torchlint.notebook.magics import MaskedCell, mask_cell, restore_cell, split_lines

#: The line between two cells in the joined source. A comment, so it is never code; unusual,
#: so no real line is taken for it.
SEPARATOR = "# %% ---- torchlint notebook cell boundary ----"
SUFFIX = ".ipynb"
_PYTHON_NAMES = ("python", "python3", "ipython", "ipython3")


class NotebookError(ValueError):
    """The file is not a notebook torchlint can read (or a fixed one it can write)."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.line, self.column = line, column


def is_notebook(path) -> bool:
    return str(path).lower().endswith(SUFFIX)


@dataclass(frozen=True)
class BrokenCell:
    """A code cell that is not Python (a TODO blank in an exercise: `loss = `). Jupyter
    fails on that cell alone; it is left out of the joined source so the rest is checked."""

    number: int
    message: str
    line: int
    column: int


@dataclass
class CodeCell:
    index: int  # 0-based position in the notebook's `cells`
    text: str  # the source as stored
    masked: MaskedCell
    first_line: int  # joined line of the cell's first line

    @property
    def number(self) -> int:
        return self.index + 1

    @property
    def line_count(self) -> int:
        return len(self.masked.lines)


class Notebook:
    def __init__(self, raw: str, document: dict, bom: bool) -> None:
        self.raw, self.document, self.bom = raw, document, bom
        self.cells: list[CodeCell] = []
        self.broken: list[BrokenCell] = []
        #: for each joined line (index line - 1): (cell number, line in cell), None on a separator
        self._where: list[tuple[int, int] | None] = []
        candidates = []
        for index, cell in enumerate(document["cells"]) if _is_python(document) else ():
            if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                continue
            text = _source_text(cell, index)
            masked = mask_cell(text)
            if text.strip() and masked.python:
                candidates.append((index, text, masked))
        self._join(candidates)
        if self.cells and not _parses(self.source):
            # One parse of the joined code tells a healthy notebook (the common case) apart;
            # only a broken one is parsed cell by cell, to check the cells that are Python.
            kept = []
            for index, text, masked in candidates:
                problem = _syntax_problem(masked.text)
                if problem is None:
                    kept.append((index, text, masked))
                else:
                    message, line, column = problem
                    column += len(masked.indent) if line - 1 in masked.dedented else 0
                    self.broken.append(BrokenCell(index + 1, message, line, column))
            if self.broken:
                self.cells, self._where = [], []
                self._join(kept)

    def _join(self, candidates) -> None:
        chunks = []
        for index, text, masked in candidates:
            if chunks:
                chunks.append(SEPARATOR + "\n")
                self._where.append(None)
            code = self._joined_text(masked)
            self.cells.append(CodeCell(index, text, masked, len(self._where) + 1))
            self._where.extend((index + 1, n) for n in range(1, len(masked.lines) + 1))
            chunks.append(code)
        self.source = "".join(chunks)

    @staticmethod
    def _joined_text(masked: MaskedCell) -> str:
        code = masked.text
        return code if code.endswith(("\n", "\r")) else code + "\n"

    # -- reading ----------------------------------------------------------------------------
    @classmethod
    def parse(cls, data: bytes) -> Notebook:
        bom = data.startswith(b"\xef\xbb\xbf")
        if not data.strip():
            raise NotebookError("not a notebook: the file is empty")
        try:
            raw = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise NotebookError(f"not a notebook: byte 0x{data[exc.start]:02x} is not UTF-8", line) from None
        try:
            document = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise NotebookError(f"not a notebook: invalid JSON ({exc.msg})", exc.lineno, exc.colno) from None
        except RecursionError:
            raise NotebookError("not a notebook: JSON nested too deeply") from None
        if not isinstance(document, dict):
            raise NotebookError("not a notebook: the JSON is not an object")
        version = document.get("nbformat")
        if "worksheets" in document or (isinstance(version, int) and version < 4):
            raise NotebookError(
                f"nbformat {version} notebook: only nbformat 4 is read "
                "(convert it: jupyter nbconvert --to notebook --nbformat 4)"
            )
        if not isinstance(document.get("cells"), list):
            raise NotebookError('not a notebook: no "cells" list')
        return cls(raw, document, bom)

    # -- positions --------------------------------------------------------------------------
    def cell_position(self, line: int) -> tuple[int, int]:
        """(cell number, line in it) of a joined line. A separator, or a line past the end (a
        syntax error at the end of the text), counts as the end of the cell before it."""
        if not self._where:
            return 1, 1
        line = min(max(line, 1), len(self._where))
        where = self._where[line - 1]
        if where is None:
            where = self._where[line - 2]
            return where[0], where[1] + 1
        return where

    def joined_line(self, number: int, line: int) -> int | None:
        """The joined-source line of line `line` of cell `number` (None: not a checked cell)."""
        for cell in self.cells:
            if cell.number == number:
                return cell.first_line + min(max(line, 1), cell.line_count) - 1
        return None

    def column_shift(self, number: int, line: int) -> int:
        """Columns to add to a joined-source column on `line` of cell `number`: the
        indentation IPython removed from it (see `MaskedCell.indent`)."""
        for cell in self.cells:
            if cell.number == number:
                return len(cell.masked.indent) if line - 1 in cell.masked.dedented else 0
        return 0

    def cell_lines(self, number: int) -> list[str]:
        """The lines of cell `number` as the notebook stores them (magics and all)."""
        for cell in self.cells:
            if cell.number == number:
                return [line.rstrip("\r\n") for line in split_lines(cell.text)]
        cell = self.document["cells"][number - 1] if 0 < number <= len(self.document["cells"]) else None
        return [line.rstrip("\r\n") for line in split_lines(_source_text(cell, number - 1))] if isinstance(cell, dict) else []

    def file_position(self, number: int, line: int, column: int) -> tuple[int, int]:
        """Line and column in the raw file of (cell, line, column): where an annotation on the
        .ipynb file must point; line 1, column 1 when the cell cannot be found in the JSON."""
        try:
            span = self._spans()[number - 1]
            lines = split_lines(_source_text(self.document["cells"][number - 1], number - 1))
        except (KeyError, IndexError, SpanError, ValueError):
            return 1, 1
        line = min(max(line, 1), max(len(lines), 1))
        offset = sum(len(text) for text in lines[: line - 1]) + max(column - 1, 0)
        offset = raw_offset(self.raw, span, offset)
        start = self.raw.rfind("\n", 0, offset) + 1
        return self.raw.count("\n", 0, offset) + 1, offset - start + 1

    _span_cache: dict | None = None

    def _spans(self):
        if self._span_cache is None:
            self._span_cache = source_spans(self.raw)
        return self._span_cache

    # -- writing ----------------------------------------------------------------------------
    def cell_sources(self, joined: str) -> dict[int, str]:
        """{cell index: new source} for each cell whose code differs in `joined` (the fixed
        joined source). NotebookError when the text cannot be split back into its cells."""
        chunks: list[list[str]] = [[]]
        for line in split_lines(joined):
            if line.rstrip("\r\n") == SEPARATOR:
                chunks.append([])
            else:
                chunks[-1].append(line)
        if len(chunks) != max(len(self.cells), 1):
            raise NotebookError("the fixed code no longer splits into the notebook's cells")
        changed = {}
        for cell, lines in zip(self.cells, chunks):
            restored = restore_cell("".join(lines), cell.masked.masks)
            if restored is None:
                raise NotebookError(f"a fix changed an IPython magic line in cell {cell.number}", cell.first_line)
            if not cell.text.endswith(("\n", "\r")) and restored.endswith("\n"):
                restored = restored[:-1]
            if cell.masked.indent:
                restored = _reindent(cell, restored)
            if restored != cell.text:
                changed[cell.index] = restored
        return changed

    def with_sources(self, changed: dict[int, str]) -> bytes:
        """The file's bytes with the sources of `changed` cells replaced and every other byte
        as it was. Checked: the result reads back as this notebook with those sources."""
        if not changed:
            return self._encode(self.raw)
        try:
            spans = self._spans()
        except (SpanError, ValueError) as exc:
            raise NotebookError(f"cannot locate the cells in the file's JSON ({exc})") from None
        ensure_ascii = self.raw.isascii() and "\\u" in self.raw
        text = self.raw
        for index in sorted(changed, reverse=True):
            span = spans.get(index)
            if span is None:
                raise NotebookError(f"cell {index + 1} has no source to replace")
            text = text[: span.start] + encode_source(self.raw, changed[index], span, ensure_ascii) + text[span.end :]
        self._verify(text, changed)
        return self._encode(text)

    def splice(self, joined: str) -> bytes:
        """The notebook file with the fixed joined source written back into its cells."""
        return self.with_sources(self.cell_sources(joined))

    def _verify(self, text: str, changed: dict[int, str]) -> None:
        try:
            written = json.loads(text)
        except ValueError as exc:
            raise NotebookError(f"writing the fixes would break the notebook's JSON ({exc})") from None
        expected = dict(self.document)
        expected["cells"] = [dict(cell, source=written["cells"][i].get("source")) if i in changed else cell
                             for i, cell in enumerate(self.document["cells"])]
        sources_ok = all(_source_text(written["cells"][i], i) == source for i, source in changed.items())
        if written != expected or not sources_ok:
            raise NotebookError("writing the fixes would change more than the fixed cells; the notebook is unchanged")

    def _encode(self, text: str) -> bytes:
        data = text.encode("utf-8")
        return b"\xef\xbb\xbf" + data if self.bom else data


def _is_python(document: dict) -> bool:
    """A notebook whose kernel is not Python (R, Julia) has no Python cells."""
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        return True
    info = metadata.get("language_info") if isinstance(metadata.get("language_info"), dict) else {}
    spec = metadata.get("kernelspec") if isinstance(metadata.get("kernelspec"), dict) else {}
    language = info.get("name") or spec.get("language")
    return not isinstance(language, str) or language.lower() in _PYTHON_NAMES


def _source_text(cell: dict, index: int) -> str:
    source = cell.get("source", "")
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        return "".join(source)
    raise NotebookError(f"not a notebook: the source of cell {index + 1} is not text")


def _reindent(cell: CodeCell, restored: str) -> str:
    """Put back the indentation IPython strips from a cell's lines: a line a fix left alone
    is the original line; a changed or new one gets the cell's indentation."""
    original = split_lines(cell.text)
    dedented = [line[len(cell.masked.indent):] if i in cell.masked.dedented else line for i, line in enumerate(original)]
    fixed = split_lines(restored)
    out = []
    matcher = difflib.SequenceMatcher(None, dedented, fixed, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.extend(original[i1:i2])
        else:
            out.extend(cell.masked.indent + line if line.strip() else line for line in fixed[j1:j2])
    return "".join(out)


def _parses(source: str) -> bool:
    return _syntax_problem(source) is None


def _syntax_problem(source: str) -> tuple[str, int, int] | None:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source)
    except SyntaxError as exc:
        return f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1
    except (ValueError, RecursionError, MemoryError):
        return None  # not a syntax error: the engine says what it is
    return None
