"""The notebook model on its own: which lines are magics, the line map, writing back."""

from __future__ import annotations

import ast
import json

import pytest

from notebook_fixtures import code, markdown, notebook
from torchlint.notebook import SEPARATOR, Notebook, NotebookError
from torchlint.notebook.magics import PLACEHOLDER, mask_cell


def masked_lines(text: str) -> list[int]:
    return [mask.index for mask in mask_cell(text).masks]


@pytest.mark.parametrize(
    "text, masked",
    [
        ("%matplotlib inline\nimport torch", [0]),
        ("!pip install torch \\\n    torchvision\nx = 1", [0, 1]),
        ("files = !ls\nmodel?\n??torch.load\nF.softmax?\n/print 1\n", [0, 1, 2, 3, 4]),
        ("for i in range(3):\n    !echo {i}\n", [1]),
        # Python that only looks like a magic: inside brackets, strings, continuations
        ("x = (a\n     % b)\ny = (a\n     != b)", []),
        ('doc = """\n!not a shell line\n%not a magic\n"""', []),
        ("total = a + \\\n    !b", []),
        ("x = 5 % 3\ny = a != b  # !comment", []),
        ("s = 'it''s'\n%who", [1]),
    ],
)
def test_only_lines_that_start_a_statement_are_magics(text, masked):
    assert masked_lines(text) == masked


def test_masked_cells_keep_their_line_count_and_parse():
    text = "for epoch in range(2):\n    %time step()\n    !nvidia-smi\nif True:\n    %matplotlib inline\n"
    cell = mask_cell(text)
    assert len(cell.lines) == len(text.splitlines())
    ast.parse(cell.text)
    assert cell.lines[1] == "    pass; step()\n"  # `%time ` -> `pass; ` keeps step()'s column
    assert cell.lines[2] == f"    {PLACEHOLDER}\n"


def test_cell_magics_other_than_timing_ones_are_not_python():
    assert not mask_cell("%%bash\nls (\n").python
    assert not mask_cell("\n%%writefile x.py\nimport torch\n").python
    timed = mask_cell("%%timeit -n 2\nf(x)\n")
    assert timed.python and timed.lines == [f"{PLACEHOLDER}\n", "f(x)\n"]


TWO = notebook(
    markdown("intro"),
    code("import torch\n%matplotlib inline\nx = torch.ones(2)", 1),
    code("%%bash\nls", 2),
    code("", 3),
    code("y = x + 1\n", 4),
)


def test_cells_are_joined_with_a_separator_and_map_back():
    book = Notebook.parse(json.dumps(TWO).encode())
    assert book.source == f"import torch\n{PLACEHOLDER}\nx = torch.ones(2)\n{SEPARATOR}\ny = x + 1\n"
    assert [cell.number for cell in book.cells] == [2, 5]  # markdown counts; bash and empty cells hold no code
    assert [book.cell_position(n) for n in (1, 3, 5)] == [(2, 1), (2, 3), (5, 1)]
    assert book.cell_position(4) == (2, 4)  # the separator: just past the cell before it
    assert book.cell_position(99) == (5, 1)


def test_unchanged_source_writes_back_the_same_bytes():
    for text in (json.dumps(TWO), json.dumps(TWO, indent=2, ensure_ascii=True), json.dumps(TWO, separators=(",", ":"))):
        data = ("\ufeff" + text + "\r\n").encode()
        book = Notebook.parse(data)
        assert book.splice(book.source) == data


def test_a_fix_writes_only_the_fixed_cell_in_its_own_layout():
    document = notebook(code("a = 1\nb = 'é'", 1), code("c = 3", 2))
    document["cells"][1]["source"] = "c = 3"  # a string, not a list: allowed by nbformat
    raw = json.dumps(document, indent=2, ensure_ascii=True)
    book = Notebook.parse(raw.encode())
    fixed = book.source.replace("a = 1", "a = 10").replace("c = 3", "c = 30")
    written = book.splice(fixed).decode()
    assert json.loads(written)["cells"][0]["source"] == ["a = 10\n", "b = '\u00e9'"]
    assert json.loads(written)["cells"][1]["source"] == "c = 30"
    assert written == raw.replace('"a = 1\\n"', '"a = 10\\n"').replace('"c = 3"', '"c = 30"')
    assert "\\u00e9" in written  # the file's escaping is kept


def test_a_fix_that_loses_a_magic_or_a_cell_boundary_is_refused():
    book = Notebook.parse(json.dumps(TWO).encode())
    with pytest.raises(NotebookError, match="magic"):
        book.splice(book.source.replace(PLACEHOLDER, "pass"))
    with pytest.raises(NotebookError, match="cells"):
        book.splice(book.source.replace(SEPARATOR + "\n", ""))


def test_file_positions_walk_json_escapes():
    document = notebook(code('import torch\nmsg = "é\\t"; z = torch.load(p)', 1))
    for ensure_ascii in (False, True):
        raw = json.dumps(document, indent=1, ensure_ascii=ensure_ascii)
        book = Notebook.parse(raw.encode())
        column = 'msg = "é\\t"; z = '.__len__() + 1
        line, raw_column = book.file_position(1, 2, column)
        assert raw.splitlines()[line - 1][raw_column - 1 :].startswith("torch.load(p)")


def test_a_cell_that_is_not_python_is_left_out_and_the_others_are_checked():
    document = notebook(code("import torch", 1), code("criterion = # TODO: pick a loss\n", 2), code("y = torch.ones(2)", 3))
    book = Notebook.parse(json.dumps(document).encode())
    assert [(c.number, c.line, c.column) for c in book.broken] == [(2, 1, 13)]
    assert "TODO" not in book.source and "y = torch.ones(2)" in book.source
    assert [cell.number for cell in book.cells] == [1, 3]


def test_an_indented_cell_is_checked_as_ipython_runs_it_and_written_back_indented():
    text = "    # pasted from a function\n    x = torch.load(p)\n\n    y = x"
    book = Notebook.parse(json.dumps(notebook(code(text, 1))).encode())
    assert not book.broken and book.source.startswith("# pasted from a function\nx = torch.load(p)\n")
    assert book.column_shift(1, 2) == 4 and book.column_shift(1, 3) == 0
    fixed = book.source.replace("torch.load(p)", "torch.load(p, weights_only=True)")
    written = json.loads(book.splice(fixed))
    assert "".join(written["cells"][0]["source"]) == text.replace("torch.load(p)", "torch.load(p, weights_only=True)")


def test_file_positions_in_a_cell_with_windows_line_ends():
    document = notebook(code("import torch", 1))
    document["cells"][0]["source"] = ["import torch\r\n", "x = torch.load(p)\r\n", "y = 1"]
    raw = json.dumps(document, indent=1)
    line, column = Notebook.parse(raw.encode()).file_position(1, 2, 5)
    assert raw.splitlines()[line - 1][column - 1 :].startswith("torch.load(p)")


def test_run_refuses_a_notebook_with_a_cell_that_is_not_python(tmp_path):
    from torchlint.runtime.parent.target import TargetError, parse_target

    path = tmp_path / "exercise.ipynb"
    path.write_text(json.dumps(notebook(code("import torch", 1), code("model = # TODO", 2))))
    with pytest.raises(TargetError, match=r"cell 2, line 1"):
        parse_target("exercise.ipynb", tmp_path)
    path.write_text(json.dumps(notebook(code("%pip install torch\nimport torch", 1))))
    assert parse_target("exercise.ipynb", tmp_path).path == path
