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

_REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_configure(config):
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller did this before starting it, and it inherits the environment
    _compile_the_package()
    _share_one_inductor_cache(config)


def _compile_the_package() -> None:
    """Byte-compile torchlint and its plugins once, as installing a wheel does. An editable
    install compiles nothing, and where PYTHONDONTWRITEBYTECODE is set (as in many CI images)
    no process writes what it compiled: every `torchlint` the suite starts (the checks, the
    runs started fresh, each rank of a distributed run, the docs pages' commands) compiled the
    package from source again, 0.15 CPU-s for a check and more for a run."""
    import compileall

    for folder in ("torchlint", "plugins"):
        compileall.compile_dir(os.path.join(_REPOSITORY, folder), quiet=2)


def _share_one_inductor_cache(config) -> None:
    """One Inductor cache for every process of the session: the runtime tests' fixture and the
    docs pages already use it (tests/runtime/conftest.py::inductor_cache), and a program a
    test compiles without asking for it would otherwise fill a second, cold one under /tmp
    (its first compile pays again for the C++ compiler's checks and precompiled header).
    A value the caller set is kept."""
    cache = getattr(config, "cache", None)
    if cache is not None:
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache.mkdir("torchlint-inductor")))


@pytest.fixture(scope="session")
def builtin_rules():
    return collect_rules(make_plugin_manager())
