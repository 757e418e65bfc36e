"""`torchlint server` driven over stdio by pygls' own LSP client, as an editor would."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402

from lsp_session import ServerSession, apply_edits, codes  # noqa: E402
from torchlint.add_noqa import silencing_line  # noqa: E402
from torchlint.findings import Finding, Location  # noqa: E402

pytestmark = pytest.mark.slow

TRAIN = textwrap.dedent(
    """\
    import torch


    def entropy_bonus(x):
        return torch.ger(x, x)


    def restore(path):
        return torch.load(path, map_location="cpu")
    """
)

MODELS = textwrap.dedent(
    """\
    import torch.nn.functional as F
    from torch import nn


    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(32, 10)

        def forward(self, x):
            return F.softmax(self.head(x), dim=1)
    """
)

LOOP = textwrap.dedent(
    """\
    import torch
    from torch import nn

    from models import Classifier


    def step(x, y):
        model = Classifier()
        criterion = nn.CrossEntropyLoss()
        loss = criterion(model(x), y)
        loss.backward()
    """
)


def run(scenario, root: Path, options: dict | None = None, cwd: Path | None = None):
    """Run `scenario(session)` against a fresh server for `root` (started in `cwd`, by
    default `root`); always end the process."""

    async def main():
        session = ServerSession(root, {"debounceMs": 30, **(options or {})}, cwd=cwd)
        await session.start()
        try:
            return await scenario(session)
        finally:
            if session.client._server.returncode is None:
                await session.kill()

    return asyncio.run(main())


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\ndependencies = ["torch>=2.1"]\n')
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def test_initialize_open_change_and_shutdown(project):
    async def scenario(session: ServerSession):
        uri = session.open("train.py")
        first = await session.latest("train.py")
        assert codes(first) == ["TL302", "TL502"]
        log = next(d for d in first.diagnostics if d.code == "TL502")
        # `torch.ger(x, x)` on line 5 (0-based 4), columns 11..26 of `    return torch.ger(x, x)`
        assert (log.range.start.line, log.range.start.character) == (4, 11)
        assert (log.range.end.line, log.range.end.character) == (4, 26)
        assert log.source == "torchlint"
        assert log.severity == types.DiagnosticSeverity.Warning
        assert log.code_description is not None and log.code_description.href.endswith("TL502.md")
        assert Path(log.code_description.href.removeprefix("file://")).read_text().startswith("# TL502")

        # The editor's text, not the file on disk: fix the line without saving.
        version = session.replace("train.py", TRAIN.replace("torch.ger(x, x)", "torch.outer(x, x)"))
        second = await session.latest("train.py", version)
        assert codes(second) == ["TL302"]
        assert (project / "train.py").read_text() == TRAIN

        # A line inserted above moves the finding down.
        version = session.replace("train.py", "# a comment\n" + TRAIN)
        third = await session.latest("train.py", version)
        moved = next(d for d in third.diagnostics if d.code == "TL502")
        assert moved.range.start.line == 5
        assert uri == session.uri("train.py")
        return await session.stop()

    assert run(scenario, project) == 0


def test_code_actions_fix_noqa_and_docs(project):
    async def scenario(session: ServerSession):
        uri = session.open("train.py")
        published = await session.latest("train.py")
        log = next(d for d in published.diagnostics if d.code == "TL502")
        actions = await session.bounded(
            session.client.text_document_code_action_async(
                types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(uri),
                    range=log.range,
                    context=types.CodeActionContext(diagnostics=[log]),
                )
            )
        )
        titles = [a.title for a in actions]
        assert titles == ["TL502: Replace with `torch.outer`", "Disable TL502 for this line", "Open the docs of TL502"]

        fix = actions[0]
        fixed = apply_edits(TRAIN, fix.edit.changes[uri])
        assert fixed == TRAIN.replace("torch.ger(x, x)", "torch.outer(x, x)")
        assert fix.is_preferred

        silenced = apply_edits(TRAIN, actions[1].edit.changes[uri])
        assert "    return torch.ger(x, x)  # noqa: TL502\n" in silenced
        # The comment really silences the finding.
        version = session.replace("train.py", silenced)
        assert codes(await session.latest("train.py", version)) == ["TL302"]

        # The docs action runs a server command that shows the rule's page.
        command = actions[2].command
        shown = await session.bounded(
            session.client.workspace_execute_command_async(
                types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
            )
        )
        assert session.shown == [shown]
        assert Path(shown.removeprefix("file://")).read_text().startswith("# TL502: deprecated-torch-function")

        # An unsafe fix is labelled as such.
        load = next(d for d in published.diagnostics if d.code == "TL302")
        session.replace("train.py", TRAIN)
        actions = await session.bounded(
            session.client.text_document_code_action_async(
                types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(uri),
                    range=load.range,
                    context=types.CodeActionContext(diagnostics=[load]),
                )
            )
        )
        unsafe = actions[0]
        assert unsafe.title == "TL302: Add `weights_only=True` (unsafe)" and not unsafe.is_preferred
        assert 'torch.load(path, map_location="cpu", weights_only=True)' in apply_edits(TRAIN, unsafe.edit.changes[uri])

    run(scenario, project)


def test_hover_shows_the_rule_documentation(project):
    async def scenario(session: ServerSession):
        uri = session.open("train.py")
        await session.latest("train.py")
        on_finding = await session.bounded(
            session.client.text_document_hover_async(
                types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line=4, character=15))
            )
        )
        assert on_finding.contents.kind == types.MarkupKind.Markdown
        assert on_finding.contents.value.startswith("**TL502** `deprecated-torch-function`")
        assert "# TL502: deprecated-torch-function" in on_finding.contents.value and "## Flagged" in on_finding.contents.value
        elsewhere = await session.bounded(
            session.client.text_document_hover_async(
                types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line=3, character=4))
            )
        )
        assert elsewhere is None

    run(scenario, project)


def test_an_edit_to_models_rechecks_the_open_training_script(tmp_path):
    (tmp_path / "models.py").write_text(MODELS)
    (tmp_path / "train.py").write_text(LOOP)

    async def scenario(session: ServerSession):
        session.open("train.py")
        assert codes(await session.latest("train.py")) == ["TL101"]  # softmax output of Classifier

        # models.py edited in the editor, not saved: train.py is checked against that text.
        session.open("models.py")
        await session.latest("models.py")
        before = len(session.published)
        session.replace("models.py", MODELS.replace("F.softmax(self.head(x), dim=1)", "self.head(x)"))
        fixed = await session.diagnostics("train.py", lambda p: "TL101" not in codes(p), after=before)
        assert codes(fixed) == []

        # Closed without saving: the file on disk counts again.
        before = len(session.published)
        session.close("models.py")
        back = await session.diagnostics("train.py", lambda p: "TL101" in codes(p), after=before)
        assert codes(back) == ["TL101"]

    run(scenario, tmp_path)


def test_a_cold_project_answers_first_from_what_the_file_imports_then_from_the_whole_project(tmp_path):
    """Nothing cached: the first diagnostics come from the open file, what it imports and the
    cache (lsp/warmup.py), while `torchlint check` of the project fills the cache beside the
    editor; then the server checks again, and the file gets what `check .` gives it. Here the
    GPU checkpoint `load.py` reads is written by `save.py`, which it does not import: TL302
    first, TL301 once the whole project is read."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "warm"\ndependencies = ["torch>=2.1"]\n')
    (tmp_path / "save.py").write_text(
        "import torch\nfrom torch import nn\n\nmodel = nn.Linear(4, 2).cuda()\ntorch.save(model.state_dict(), 'ckpt.pt')\n")
    (tmp_path / "load.py").write_text(
        "import torch\nfrom torch import nn\n\nmodel = nn.Linear(4, 2)\nmodel.load_state_dict(torch.load('ckpt.pt'))\n"
        "warm = torch.load('warm.pt', map_location='cpu', weights_only=True)\n")

    async def scenario(session: ServerSession):
        session.open("load.py")
        first = await session.diagnostics("load.py", lambda p: bool(p.diagnostics))
        assert codes(first) == ["TL302"]
        whole = await session.diagnostics("load.py", lambda p: "TL301" in codes(p), after=session.published.index(first) + 1)
        assert codes(whole) == ["TL301"] and whole.version == 1
        entries = [path for path in (tmp_path / ".torchlint_cache").rglob("*") if path.is_file()]
        assert len(entries) >= 2  # the warm-up's results of save.py and load.py, for the next start

    run(scenario, tmp_path)


def test_configuration_is_read_and_reloaded(project):
    config = project / "torchlint.toml"
    config.write_text('ignore = ["TL502"]\n')

    async def scenario(session: ServerSession):
        session.open("train.py")
        assert codes(await session.latest("train.py")) == ["TL302"]
        assert any(r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES for r in session.registrations)

        config.write_text('ignore = ["TL302"]\n')
        before = len(session.published)
        session.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams([types.FileEvent(uri=config.as_uri(), type=types.FileChangeType.Changed)])
        )
        assert codes(await session.diagnostics("train.py", lambda p: True, after=before)) == ["TL502"]

        # Saving the configuration in the editor reloads it too.
        config.write_text("")
        before = len(session.published)
        session.client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(config.as_uri())))
        assert codes(await session.diagnostics("train.py", lambda p: True, after=before)) == ["TL302", "TL502"]

        # A client that reports neither: the next check notices the file changed.
        config.write_text('ignore = ["TL302", "TL502"]\n')
        version = session.replace("train.py", TRAIN + "\n")
        assert codes(await session.latest("train.py", version)) == []

    run(scenario, project)


def test_a_broken_configuration_is_reported_and_the_defaults_apply(project):
    (project / "torchlint.toml").write_text("select = 'TL4'\n")

    async def scenario(session: ServerSession):
        session.open("train.py")
        # the defaults of --isolated: not even the project's torch pin is read, so TL302 judges by
        # the torch installed here (2.6 or newer in this suite's environment, or the stable one)
        assert codes(await session.latest("train.py")) == ["TL502"]
        assert len(session.messages) == 1 and "select must be a list of strings" in session.messages[0]
        assert "using the default settings" in session.messages[0]

    run(scenario, project)


def test_per_file_ignores_match_project_paths_wherever_the_server_started(tmp_path):
    """Editors start servers in all sorts of folders; patterns are relative to the project."""
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.torchlint.per-file-ignores]\n"scripts/*.py" = ["TL302"]\n')
    (project / "scripts" / "train.py").write_text(TRAIN)
    # A folder inside the project: `scripts/train.py` seen from there is not the project's.
    (project / "docs").mkdir()

    async def scenario(session: ServerSession):
        session.open("scripts/train.py")
        assert codes(await session.latest("scripts/train.py")) == ["TL502"]

    run(scenario, project, cwd=project / "docs")


def _finding(code: str, line: int, end_line: int | None = None) -> Finding:
    return Finding(code, "rule", "message", "m.py", Location(line, 1, end_line or line, 2))


@pytest.mark.parametrize(
    "line, expected",
    [
        ("y = f(x)", "y = f(x)  # noqa: TL502"),
        ("y = f(x)   ", "y = f(x)  # noqa: TL502"),
        ("y = f(x)  # noqa: TL302", "y = f(x)  # noqa: TL302, TL502"),
        ("y = f(x)  # keep this", "y = f(x)  # keep this  # noqa: TL502"),
    ],
)
def test_the_noqa_action_adds_or_merges_as_add_noqa_does(line, expected):
    assert silencing_line(f"import torch\n{line}\nz = 1\n", _finding("TL502", 2)) == (2, expected)


def test_the_noqa_action_goes_where_a_comment_can_go():
    text = 'y = f("""a\nb""", x) + \\\n    g(x)\n'
    # line 1 ends inside a string, line 2 with a backslash: the finding's last line takes it
    assert silencing_line(text, _finding("TL502", 1, 3)) == (3, "    g(x)  # noqa: TL502")
    assert silencing_line(text, _finding("TL502", 1, 2)) is None
    # the engine's own codes are not silenced by a comment
    assert silencing_line("def f(:\n", _finding("TL000", 1)) is None
