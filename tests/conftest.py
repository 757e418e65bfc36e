"""Shared fixtures.

Samples that expect TL301 name cuda somewhere (`import torch  # on cuda` is enough): TL301
leaves alone a project none of whose files names an accelerator, since nothing in it can
have saved a tensor on one.
"""

from __future__ import annotations

import pytest

from torchlint.pluginmanager import collect_rules, make_plugin_manager


@pytest.fixture(scope="session")
def builtin_rules():
    return collect_rules(make_plugin_manager())
