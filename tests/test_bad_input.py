"""Bad input is one clear TL000 finding (or a reasoned skip); the other files are still checked."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from torchlint.cli import main

BUGGY = b"import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nstate = torch.load('ckpt.pt', weights_only=True)\n"


def check_json(tmp_path, monkeypatch, *paths):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--output-format", "json", *paths], catch_exceptions=False)
    return result.exit_code, {(d["filename"], d["code"]): d for d in json.loads(result.output)}


@pytest.mark.parametrize(
    "name,content,message",
    [
        ("syntax.py", b"import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\ndef f(:\n    torch.load(x, weights_only=True)\n", "syntax error"),
        ("syntax_no_torch.py", b"def f(:\n    pass\n", "syntax error"),
        ("latin.py", b"import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nname = '\xe9t\xe9'\n", "not valid utf-8 text: byte 0xe9"),
        ("nul.py", b"import torch\x00\n", "NUL byte"),
        ("badcookie.py", b"# -*- coding: no-such-codec -*-\nimport torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n", "encoding"),
    ],
)
def test_unparsable_file_is_one_finding_and_the_run_goes_on(tmp_path, monkeypatch, name, content, message):
    (tmp_path / name).write_bytes(content)
    (tmp_path / "good.py").write_bytes(BUGGY)
    code, found = check_json(tmp_path, monkeypatch, ".")
    assert code == 1
    assert set(found) == {(name, "TL000"), ("good.py", "TL301")}
    assert message in found[(name, "TL000")]["message"]


def test_declared_latin1_file_is_read_correctly(tmp_path, monkeypatch):
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nimport torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nname = '\xe9'\nx = torch.load(p, weights_only=True)\n")
    code, found = check_json(tmp_path, monkeypatch, ".")
    assert set(found) == {("latin.py", "TL301")}


def test_syntax_error_location_is_reported(tmp_path, monkeypatch):
    (tmp_path / "s.py").write_bytes(b"import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n\nx = (1,\n")
    _, found = check_json(tmp_path, monkeypatch, ".")
    finding = found[("s.py", "TL000")]
    assert finding["location"]["row"] >= 3


def test_empty_file_and_directory_named_like_a_module(tmp_path, monkeypatch):
    (tmp_path / "empty.py").write_bytes(b"")
    (tmp_path / "pkg.py").mkdir()
    (tmp_path / "pkg.py" / "inner.py").write_bytes(BUGGY)
    code, found = check_json(tmp_path, monkeypatch, ".")
    assert set(found) == {("pkg.py/inner.py", "TL301")}


def test_broken_symlink_and_symlink_loop(tmp_path, monkeypatch):
    (tmp_path / "broken.py").symlink_to(tmp_path / "missing.py")
    (tmp_path / "loop.py").symlink_to(tmp_path / "loop.py")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "up").symlink_to(tmp_path, target_is_directory=True)  # a folder loop
    (tmp_path / "good.py").write_bytes(BUGGY)
    code, found = check_json(tmp_path, monkeypatch, ".")
    assert code == 1
    assert set(found) == {("broken.py", "TL000"), ("loop.py", "TL000"), ("good.py", "TL301")}
    assert "symbolic link" in found[("broken.py", "TL000")]["message"]


def test_missing_path_is_reported(tmp_path, monkeypatch):
    code, found = check_json(tmp_path, monkeypatch, "nope.py")
    assert code == 1
    assert "no such file" in found[("nope.py", "TL000")]["message"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read files without read permission")
def test_unreadable_file(tmp_path, monkeypatch):
    path = tmp_path / "secret.py"
    path.write_bytes(BUGGY)
    path.chmod(0)
    code, found = check_json(tmp_path, monkeypatch, ".")
    assert "permission denied" in found[("secret.py", "TL000")]["message"]


def test_unreadable_file_via_patched_read(tmp_path, monkeypatch):
    """The permission path, exercised even when the tests run as root."""
    from torchlint.static import source

    (tmp_path / "secret.py").write_bytes(BUGGY)
    (tmp_path / "good.py").write_bytes(BUGGY)
    real = source.os.open

    def open_(path, *args, **kwargs):
        if str(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(source.os, "open", open_)
    code, found = check_json(tmp_path, monkeypatch, ".")
    assert set(found) == {("secret.py", "TL000"), ("good.py", "TL301")}
    assert "permission denied" in found[("secret.py", "TL000")]["message"]


def test_fifty_thousand_line_file(tmp_path, monkeypatch):
    body = "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n" + "".join(f"x{i} = torch.zeros({i})\n" for i in range(50_000)) + "y = torch.load(p, weights_only=True)\n"
    (tmp_path / "big.py").write_text(body)
    code, found = check_json(tmp_path, monkeypatch, ".")
    assert found[("big.py", "TL301")]["location"]["row"] == 50_002


def test_deeply_nested_expression_does_not_crash(tmp_path, monkeypatch):
    expr = " + ".join(["a"] * 3000)
    (tmp_path / "deep.py").write_text(f"import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = {expr}\ny = torch.load(p, weights_only=True)\n")
    code, found = check_json(tmp_path, monkeypatch, ".")
    assert ("deep.py", "TL301") in found or ("deep.py", "TL000") in found
    assert ("deep.py", "TL001") not in found


def test_a_crashing_rule_is_reported_and_the_others_still_run(tmp_path):
    from torchlint.pluginmanager import hookimpl
    from torchlint.rule import Rule
    from torchlint.testing import check_sources

    class Exploding(Rule):
        code = "XX100"
        name = "exploding"
        summary = "always crashes"

        def visit_Call(self, node):
            raise ValueError("boom")

    class Pack:
        @hookimpl
        def torchlint_rules(self):
            return [Exploding]

    result = check_sources({"a.py": BUGGY.decode()}, select=["TL301", "XX100", "TL001"], extra_plugins=[Pack()])
    assert [(f.code, f.location.line) for f in result.findings] == [("TL001", 1), ("TL301", 2)]
    assert "ValueError: boom" in result.findings[0].message


@pytest.mark.parametrize("select", ["TL3", "TL301", "TL1,TL2"])
def test_unreadable_and_unparsable_files_are_reported_whatever_the_selection(tmp_path, monkeypatch, select):
    (tmp_path / "broken.py").write_text("import torch\ndef f(:\n    pass\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--select", select, "--output-format", "json", "broken.py", "missing.py"])
    found = {(d["filename"], d["code"]): d["message"] for d in json.loads(result.output)}
    assert set(found) == {("broken.py", "TL000"), ("missing.py", "TL000")}
    assert "syntax error" in found[("broken.py", "TL000")]
    assert "no such file" in found[("missing.py", "TL000")]
    assert result.exit_code == 1
