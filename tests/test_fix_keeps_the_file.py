"""--fix replaces a file only while it is still what torchlint read, and keeps what makes the
file the user's: owner, group, mode, hard links, a BOM; it follows a symbolic link only to a
file inside the project and leaves a read-only file alone unless told otherwise."""

from __future__ import annotations

import os
import stat

import pytest
from click.testing import CliRunner

from torchlint.cli import main
from torchlint.guarded_write import NotReplaced, WritePolicy, replace_unchanged
from torchlint.static.source import read_source

SOURCE = 'import torch; DEVICE = "cuda" if torch.cuda.is_available() else "cpu"\nx = torch.load("m.pt", weights_only=True)\n'
FIXED = 'import torch; DEVICE = "cuda" if torch.cuda.is_available() else "cpu"\nx = torch.load("m.pt", weights_only=True, map_location="cpu")\n'
EDITOR_SAVE = 'import torch; DEVICE = "cuda" if torch.cuda.is_available() else "cpu"\nx = torch.load("m.pt", weights_only=True)  # saved by the editor\n'

posix_only = pytest.mark.skipif(os.name != "posix", reason="owners, modes and links are POSIX here")


def fix(*args):
    return CliRunner().invoke(main, ["check", "--no-cache", "--fix", "--unsafe-fixes", "--select", "TL301",
                                     "--output-format", "concise", *args], catch_exceptions=False)


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "p"\n')
    monkeypatch.chdir(root)
    return root


def test_an_edit_saved_while_the_fix_runs_is_kept(project, monkeypatch):
    from torchlint.fix import runner

    (project / "a.py").write_text(SOURCE)
    computing = runner.fix_text

    def save_while_computing(*args, **kwargs):
        result = computing(*args, **kwargs)
        (project / "a.py").write_text(EDITOR_SAVE)  # the editor saves before torchlint writes
        return result

    monkeypatch.setattr(runner, "fix_text", save_while_computing)
    result = fix("a.py")
    assert (project / "a.py").read_text() == EDITOR_SAVE
    assert result.exit_code == 1
    assert "TL002 the file changed on disk after torchlint read it" in result.output


def test_a_file_touched_after_it_was_read_is_not_replaced(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(SOURCE)
    source = read_source(path)
    later = os.stat(path).st_mtime_ns + 5_000_000_000
    os.utime(path, ns=(later, later))  # same bytes, but not the file as it was read
    with pytest.raises(NotReplaced, match="changed on disk"):
        replace_unchanged(path, source.state, FIXED.encode())
    assert path.read_text() == SOURCE


def test_a_file_replaced_by_another_after_it_was_read_is_not_replaced(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(SOURCE)
    source = read_source(path)
    (tmp_path / "saved.py").write_text(SOURCE)
    os.replace(tmp_path / "saved.py", path)  # an editor's atomic save of the same bytes: a new inode
    with pytest.raises(NotReplaced, match="changed on disk"):
        replace_unchanged(path, source.state, FIXED.encode())


@posix_only
@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_fixing_as_root_keeps_the_owner_group_and_mode(project):
    path = project / "a.py"
    path.write_text(SOURCE)
    os.chown(path, 1234, 4321)
    path.chmod(0o751)
    result = fix("a.py")
    assert result.exit_code == 0, result.output
    info = os.stat(path)
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (1234, 4321, 0o751)
    assert path.read_text() == FIXED


@posix_only
def test_a_hard_linked_file_stays_one_file(project):
    path = project / "a.py"
    path.write_text(SOURCE)
    other = project / "b.py"
    os.link(path, other)
    result = fix("a.py")
    assert result.exit_code == 0, result.output
    assert path.read_text() == other.read_text() == FIXED
    assert os.stat(path).st_ino == os.stat(other).st_ino and os.stat(path).st_nlink == 2


@posix_only
def test_a_read_only_file_is_refused_unless_asked(project):
    path = project / "a.py"
    path.write_text(SOURCE)
    path.chmod(0o444)
    refused = fix("a.py")
    assert refused.exit_code == 1
    assert "a.py:2:5: TL002 the file is read-only; left unchanged (--fix-read-only writes it anyway)" in refused.output
    assert path.read_text() == SOURCE
    if os.geteuid() == 0 or os.access(project, os.W_OK):
        written = fix("--fix-read-only", "a.py")
        assert written.exit_code == 0, written.output
        assert path.read_text() == FIXED
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o444


def test_a_bom_is_kept(project):
    path = project / "a.py"
    path.write_bytes(b"\xef\xbb\xbf" + SOURCE.encode())
    result = fix("a.py")
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == b"\xef\xbb\xbf" + FIXED.encode()


def test_a_bom_with_a_coding_cookie_is_kept(project):
    path = project / "a.py"
    path.write_bytes(b"\xef\xbb\xbf# -*- coding: utf-8 -*-\n" + SOURCE.encode())
    fix("a.py")
    assert path.read_bytes() == b"\xef\xbb\xbf# -*- coding: utf-8 -*-\n" + FIXED.encode()


@posix_only
@pytest.mark.parametrize("isolated", [False, True])
def test_a_link_out_of_the_project_is_not_written_through(project, isolated):
    outside = project.parent / "outside"
    outside.mkdir()
    target = outside / "model.py"
    target.write_text(SOURCE)
    (project / "link.py").symlink_to(target)
    result = fix(*(["--isolated"] if isolated else []), "link.py")
    assert target.read_text() == SOURCE
    assert result.exit_code == 1
    assert f"TL002 is a symbolic link to {target}, outside the project" in result.output
    assert (project / "link.py").is_symlink()


@posix_only
def test_a_link_inside_the_project_is_written_through(project):
    (project / "real").mkdir()
    target = project / "real" / "model.py"
    target.write_text(SOURCE)
    (project / "link.py").symlink_to(target)
    result = fix("link.py")
    assert result.exit_code == 0, result.output
    assert target.read_text() == FIXED and (project / "link.py").is_symlink()


@posix_only
def test_add_noqa_keeps_an_edit_saved_meanwhile_and_stays_in_the_project(project, monkeypatch):
    from torchlint import add_noqa

    outside = project.parent / "outside"
    outside.mkdir()
    (outside / "model.py").write_text(SOURCE)
    (project / "link.py").symlink_to(outside / "model.py")
    (project / "a.py").write_text(SOURCE)
    reading = add_noqa.read_source

    def save_after_reading(path):
        source = reading(path)
        if path.name == "a.py":
            (project / "a.py").write_text(EDITOR_SAVE)
        return source

    monkeypatch.setattr(add_noqa, "read_source", save_after_reading)
    result = CliRunner().invoke(main, ["check", "--no-cache", "--add-noqa", "--select", "TL301", "a.py", "link.py"],
                                catch_exceptions=False)
    assert (project / "a.py").read_text() == EDITOR_SAVE
    assert (outside / "model.py").read_text() == SOURCE
    assert "a.py: the file changed on disk after torchlint read it" in result.output
    assert "outside the project" in result.output


def test_the_policy_refuses_before_anything_is_read(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(SOURCE)
    path.chmod(0o444)
    try:
        with pytest.raises(NotReplaced, match="read-only"):
            replace_unchanged(path, read_source(path).state, FIXED.encode(), WritePolicy(root=tmp_path))
        replace_unchanged(path, read_source(path).state, FIXED.encode(), WritePolicy(root=tmp_path, read_only_too=True))
    finally:
        path.chmod(0o644)
    assert path.read_text() == FIXED
