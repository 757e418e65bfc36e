"""docs/configuration.md documents exactly the keys the configuration reader accepts, with
examples the reader accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchlint import config as config_module
from torchlint.config import Config, load_config
from torchlint.config_reference import PLUGIN_TABLE_EXAMPLE, SETTINGS


def test_every_key_the_reader_accepts_is_documented_and_no_other():
    documented = {setting.key for setting in SETTINGS}
    accepted = set(config_module._KNOWN_KEYS)
    assert accepted - documented == set(), "add a Setting to torchlint/config_reference.py, then run python -m torchlint.docsgen"
    assert documented - accepted == set(), "documented keys the reader rejects"


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda setting: setting.key)
def test_each_example_is_accepted_and_changes_its_setting(setting, tmp_path):
    (tmp_path / "pyproject.toml").write_text(f"[tool.torchlint]\n{setting.key} = {setting.example}\n")
    loaded = load_config(tmp_path / "pyproject.toml", cwd=tmp_path)
    assert getattr(loaded, setting.attribute) != getattr(Config(root=tmp_path), setting.attribute)


def test_the_plugin_table_example_is_read_as_the_plugins_options(tmp_path):
    (tmp_path / "pyproject.toml").write_text(f"[tool.torchlint]\n\n{PLUGIN_TABLE_EXAMPLE}")
    loaded = load_config(tmp_path / "pyproject.toml", cwd=tmp_path)
    assert loaded.plugin_options("my_local_rules") == {"threshold": 3}


def test_the_configuration_page_is_generated_and_current():
    from torchlint import docsgen

    page = Path(docsgen.CONFIGURATION)
    assert page.exists() and page.read_text() == docsgen.render_configuration(), "run: python -m torchlint.docsgen"
