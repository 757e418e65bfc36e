"""Shared fixtures.

Samples that expect TL301 name cuda somewhere (`import torch  # on cuda` is enough): TL301
leaves alone a project none of whose files names an accelerator, since nothing in it can
have saved a tensor on one.
"""

from __future__ import annotations

import os

import pytest

from torchlint.pluginmanager import collect_rules, make_plugin_manager  # imports no torch

# The suite runs one worker per core (pyproject: -n logical), and each worker starts torch in
# its warm server, in the programs under `torchlint run` and in the page commands of the docs
# test. A torch with one OpenMP thread per core in each of them oversubscribes the cores and
# spins waiting for them: one thread each took a quarter less CPU for the same tests
# (test_reference.py, one process: 43 -> 33 CPU-s). Set before anything imports torch; a
# value the caller set is kept.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def builtin_rules():
    return collect_rules(make_plugin_manager())
