"""Shared fixtures.

Samples that expect TL301 start `import torch; DEVICE = 'cuda' if torch.cuda.is_available()
else 'cpu'`: TL301 leaves alone a project none of whose files names an accelerator (nothing in
it can have saved a tensor on one), and reports by default only in a file that says it also
runs on the CPU (else the load is TL303's, off by default).
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


#: The test files that take longest (wall seconds on a clean clone, 2 cores): each worker
#: starts with them. xdist hands out files with the most tests first, so these, which hold a
#: few long tests each, came last, and the suite ended with one worker running the compile
#: page for half a minute while the other had nothing left to do.
LONGEST_FIRST = (
    "tests/runtime/test_compile_minify.py",  # ~75 s: two minifier runs, cold Inductor
    "tests/test_docs.py",  # ~75 s: every command of every page
    "tests/runtime/test_compile_invisible.py",  # ~50 s
    "tests/runtime/test_dist_examples.py",  # ~40 s: twelve two-rank runs, four at a time
    "tests/runtime/test_run_invisible.py",  # ~60 s: ten fresh runs with real pipes, a pty, signals; two ranks
    "tests/test_docs_compile_page.py",  # ~35 s
)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile` with the files of LONGEST_FIRST handed out first."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LongestFirst(LoadFileScheduling):
        _ordered = False

        def _assign_work_unit(self, node) -> None:
            if not self._ordered:  # the first assignment: the queue is complete, nothing taken yet
                self._ordered = True
                rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
                units = sorted(self.workqueue.items(), key=lambda unit: rank.get(unit[0], len(rank)))
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    return LongestFirst(config, log)


@pytest.fixture
def torch_2_5_installed(monkeypatch):
    """This process's torchlint sees torch 2.5.1 installed (its distribution metadata), as in
    an environment that pins an older torch: a bare `torch.load` there unpickles anything, so
    TL302 reports it in a project that does not say which torch it runs on."""
    monkeypatch.setattr("torchlint.entrypoints.installed_version", lambda project: "2.5.1" if project == "torch" else None)
