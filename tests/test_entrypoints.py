"""torchlint's entry-point scan finds exactly what importlib.metadata finds, in the same order."""

from __future__ import annotations

import importlib.metadata
import sys
import zipfile

import pytest

from torchlint import entrypoints
from torchlint.entrypoints import EntryPoint, entry_points


def importlib_view(group: str) -> list[tuple[str, str, str, str]]:
    return [
        (ep.name, ep.value, dist.metadata["name"], dist.version)
        for dist in importlib.metadata.distributions()
        for ep in dist.entry_points
        if ep.group == group
    ]


def ours(group: str) -> list[tuple[str, str, str, str]]:
    return [(ep.name, ep.value, ep.project, ep.version) for ep in entry_points(group)]


def make_dist(folder, dist_folder, entry_points_text, metadata=None):
    dist = folder / dist_folder
    dist.mkdir(parents=True)
    (dist / "entry_points.txt").write_text(entry_points_text)
    if metadata is not None:
        (dist / ("PKG-INFO" if dist_folder.endswith(".egg-info") else "METADATA")).write_text(metadata)
    return dist


@pytest.fixture
def on_sys_path(monkeypatch):
    def add(*folders):
        for folder in reversed(folders):
            monkeypatch.syspath_prepend(str(folder))
        importlib.invalidate_caches()

    return add


@pytest.mark.parametrize("group", ["torchlint", "console_scripts", "pytest11"])
def test_the_installed_environment_reads_the_same(group):
    assert ours(group) == importlib_view(group)


def test_third_party_layouts_read_the_same_as_importlib(tmp_path, on_sys_path):
    first, second = tmp_path / "first", tmp_path / "second"
    make_dist(
        first,
        "acme_rules-1.2.dist-info",
        "# a comment\n[console_scripts]\nacme = acme.cli:main\n\n[torchlint]\nacme = acme_rules\n"
        "# another comment\nacme_formats = acme_rules.formats:plugin [fast]\n",
        "Metadata-Version: 2.1\nName: acme-rules\nVersion: 1.2\n\nacme: a long description\n",
    )
    make_dist(first, "old_pack.egg-info", "[torchlint]\nold = old_pack\n", "Metadata-Version: 1.1\nName: old-pack\nVersion: 0.3\n")
    make_dist(second, "acme_rules-0.9.dist-info", "[torchlint]\nacme = acme_rules_old\n", "Name: acme-rules\nVersion: 0.9\n")
    make_dist(second, "unrelated-1.0.dist-info", "[pytest11]\nx = y\n", "Name: unrelated\nVersion: 1.0\n")
    on_sys_path(first, second)

    assert ours("torchlint") == importlib_view("torchlint")
    found = entry_points("torchlint")
    names = [(ep.name, ep.project, ep.version) for ep in found]
    assert ("acme", "acme-rules", "1.2") in names and ("old", "old-pack", "0.3") in names
    # Both acme versions are listed, the first on sys.path first: the plugin manager keeps it.
    acme = [ep for ep in found if ep.name == "acme"]
    assert [ep.value for ep in acme[:2]] == ["acme_rules", "acme_rules_old"]


def test_version_and_name_fall_back_to_the_folder_name(tmp_path, on_sys_path):
    make_dist(tmp_path, "bare_pack-2.0.dist-info", "[torchlint]\nbare = bare_pack\n")
    on_sys_path(tmp_path)
    assert EntryPoint("bare", "bare_pack", "bare_pack", "2.0") in entry_points("torchlint")


def test_an_archive_on_sys_path_is_left_to_importlib(tmp_path, on_sys_path):
    archive = tmp_path / "zipped.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("zipped_pack-1.0.dist-info/METADATA", "Name: zipped-pack\nVersion: 1.0\n")
        zipped.writestr("zipped_pack-1.0.dist-info/entry_points.txt", "[torchlint]\nzipped = zipped_pack\n")
    on_sys_path(archive)
    assert entrypoints._needs_importlib_metadata()
    assert ("zipped", "zipped_pack", "zipped-pack", "1.0") in ours("torchlint")


def test_load_imports_the_module_and_follows_attributes(tmp_path, on_sys_path):
    (tmp_path / "pack_mod.py").write_text("class Outer:\n    class Inner:\n        pass\n")
    on_sys_path(tmp_path)
    assert EntryPoint("p", "pack_mod", "pack", "1").load() is sys.modules["pack_mod"]
    assert EntryPoint("p", "pack_mod:Outer.Inner [extra]", "pack", "1").load() is sys.modules["pack_mod"].Outer.Inner
    with pytest.raises(ValueError, match="malformed"):
        EntryPoint("p", "pack_mod:", "pack", "1").load()
