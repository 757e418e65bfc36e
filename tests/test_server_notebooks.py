"""Notebooks in `torchlint server`, driven over stdio as an editor would: LSP 3.17 notebook
sync (diagnostics, fixes and hovers per cell), and a `.ipynb` opened as plain JSON text."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402

from lsp_session import ServerSession, apply_edits, codes  # noqa: E402
from notebook_fixtures import TUTORIAL, code, notebook, write_notebook  # noqa: E402
from test_server import run  # noqa: E402

pytestmark = pytest.mark.slow


def _cells(document: dict) -> list[tuple[str, str]]:
    return [(cell["cell_type"], "".join(cell["source"])) for cell in document["cells"]]


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    # TL401 (off by default) is the fixable rule the notebook cells trip
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n\n[tool.torchlint]\nextend-select = ["TL401"]\n')
    return tmp_path


def _code_actions(session: ServerSession, uri: str, diagnostic: types.Diagnostic):
    return session.bounded(
        session.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri),
                range=diagnostic.range,
                context=types.CodeActionContext(diagnostics=[diagnostic]),
            )
        )
    )


def test_a_synced_notebook_gets_diagnostics_per_cell_across_cells(project):
    """TUTORIAL: the model's forward (cell 3) ends in softmax, CrossEntropyLoss is applied in
    cell 5; cells 2 and 4 hold magics (`%matplotlib`, `!pip`, `%%time`, `model?`)."""

    async def scenario(session: ServerSession):
        cells = session.open_notebook("tutorial.ipynb", _cells(TUTORIAL))
        loss = await session.latest(cells[4])
        assert codes(loss) == ["TL101"]
        found = loss.diagnostics[0]
        # `loss = criterion(model(x), y)`: the finding starts at `criterion`, line 1 of the cell
        assert (found.range.start.line, found.range.start.character) == (0, 7)
        assert "line 7 of cell 3" in found.message
        # The magics are masked, not reported; every code cell is published, even when clean.
        for index in (1, 2, 3):
            assert codes(await session.latest(cells[index])) == []
        assert all(p.uri in cells for p in session.published)  # never the notebook's own URI

        hovered = await session.bounded(
            session.client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(cells[4]), types.Position(0, 10)))
        )
        assert hovered.contents.value.startswith("**TL101** `softmax-before-cross-entropy`")

        # An edit of cell 3 (not saved) re-checks cell 5.
        forward = session.texts[cells[2]]
        before = len(session.published)
        session.change_cell("tutorial.ipynb", cells[2], forward.replace("F.softmax(self.fc(x), dim=1)", "self.fc(x)"))
        assert codes(await session.diagnostics(cells[4], after=before)) == []
        # A cell being typed (not Python yet) is reported alone; the others are still checked.
        version = session.change_cell("tutorial.ipynb", cells[2], forward + "\n    def extra(self")
        broken = await session.latest(cells[2], version)
        assert codes(broken) == ["TL000"] and "this cell is not checked" in broken.diagnostics[0].message
        before = len(session.published)
        session.change_cell("tutorial.ipynb", cells[2], forward)
        assert codes(await session.diagnostics(cells[4], lambda p: bool(p.diagnostics), after=before)) == ["TL101"]

        # Closed: its cells' diagnostics are cleared.
        before = len(session.published)
        session.close_notebook("tutorial.ipynb", cells)
        cleared = await session.diagnostics(cells[4], after=before)
        assert not cleared.diagnostics

    run(scenario, project)


SETUP = "%matplotlib inline\nimport torch"
BONUS = textwrap.dedent(
    """\
    def bonus(x):
        return torch.log(1 + x)"""
)
TIMED = "def timed(x):\n    %time y = torch.log(1 + x)\n    return y"


def test_fixes_and_noqa_edit_the_cells_and_keep_magics(project):
    async def scenario(session: ServerSession):
        cells = session.open_notebook("fixes.ipynb", [("code", SETUP), ("markdown", "# Bonus"), ("code", BONUS), ("code", TIMED)])
        bonus = await session.latest(cells[2])
        assert codes(bonus) == ["TL401"]
        log = bonus.diagnostics[0]
        assert (log.range.start.line, log.range.start.character) == (1, 11)
        actions = await _code_actions(session, cells[2], log)
        assert [a.title for a in actions] == ["TL401: Replace with `torch.log1p`", "Disable TL401 for this line", "Open the docs of TL401"]
        fix, noqa = actions[0], actions[1]
        assert list(fix.edit.changes) == [cells[2]]  # only this cell's document is edited
        assert apply_edits(BONUS, fix.edit.changes[cells[2]]) == BONUS.replace("torch.log(1 + x)", "torch.log1p(x)")
        silenced = apply_edits(BONUS, noqa.edit.changes[cells[2]])
        assert silenced == BONUS + "  # noqa: TL401"
        version = session.change_cell("fixes.ipynb", cells[2], silenced)
        assert codes(await session.latest(cells[2], version)) == []

        # A fix on a line run under `%time` keeps the magic.
        timed = await session.latest(cells[3])
        assert codes(timed) == ["TL401"]
        assert timed.diagnostics[0].range.start.line == 1
        actions = await _code_actions(session, cells[3], timed.diagnostics[0])
        assert apply_edits(TIMED, actions[0].edit.changes[cells[3]]) == TIMED.replace("torch.log(1 + x)", "torch.log1p(x)")

    run(scenario, project)


def test_a_notebook_opened_as_json_text_gets_findings_on_the_cells_lines(project):
    """A client without notebook sync (Neovim, Helix) may send the .ipynb file as text."""
    document = notebook(*TUTORIAL["cells"], code("def bonus(x):\n    return torch.log(1 + x)", 6))
    path = write_notebook(project / "tutorial.ipynb", document)
    raw = path.read_text()
    raw_lines = raw.split("\n")

    async def scenario(session: ServerSession):
        uri = session.open("tutorial.ipynb", raw)
        published = await session.latest("tutorial.ipynb")
        assert codes(published) == ["TL101", "TL401"]
        loss = next(d for d in published.diagnostics if d.code == "TL101")
        line = next(number for number, text in enumerate(raw_lines) if "loss = criterion(model(x), y)" in text)
        assert (loss.range.start.line, loss.range.start.character) == (line, raw_lines[line].index("criterion"))
        assert "line 7 of cell 3" in loss.message

        log = next(d for d in published.diagnostics if d.code == "TL401")
        actions = await _code_actions(session, uri, log)
        assert actions[0].title == "TL401: Replace with `torch.log1p`"
        fixed = json.loads(apply_edits(raw, actions[0].edit.changes[uri]))
        assert "".join(fixed["cells"][-1]["source"]) == "def bonus(x):\n    return torch.log1p(x)"
        assert fixed["cells"][:-1] == document["cells"][:-1]  # outputs, magics, other cells untouched
        silenced = json.loads(apply_edits(raw, actions[1].edit.changes[uri]))
        assert "".join(silenced["cells"][-1]["source"]).endswith("torch.log(1 + x)  # noqa: TL401")

        # Half-typed JSON: one TL000 where the JSON breaks, until it is a notebook again.
        version = session.replace("tutorial.ipynb", raw[: raw.index('"nbformat"')])
        broken = await session.latest("tutorial.ipynb", version)
        assert codes(broken) == ["TL000"] and "invalid JSON" in broken.diagnostics[0].message

        # A plugin that shows a notebook as a `# %%` script (jupytext.nvim) sends that text
        # under the notebook's name: it is checked as the Python it is.
        script = "# %%\nimport torch\n\n# %%\ndef bonus(x):\n    return torch.log(1 + x)\n"
        uri = session.open("script.ipynb", script)
        shown = await session.latest("script.ipynb")
        assert codes(shown) == ["TL401"] and shown.diagnostics[0].range.start.line == 5
        actions = await _code_actions(session, uri, shown.diagnostics[0])
        assert "torch.log1p(x)" in apply_edits(script, actions[0].edit.changes[uri])

    run(scenario, project)


def test_notebooks_left_out_by_the_configuration_get_no_diagnostics(project):
    (project / "pyproject.toml").write_text('[tool.torchlint]\ninclude = ["*.py", "*.pyi"]\n')

    async def scenario(session: ServerSession):
        cells = session.open_notebook("tutorial.ipynb", _cells(TUTORIAL))
        assert codes(await session.latest(cells[4])) == []

    run(scenario, project)
