from __future__ import annotations

import pytest

from torchlint.pluginmanager import collect_rules, make_plugin_manager


@pytest.fixture(scope="session")
def builtin_rules():
    return collect_rules(make_plugin_manager())
