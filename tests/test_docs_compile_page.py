"""Every command the compile examples' page shows is run and prints what the page shows.

A file of its own, apart from test_docs.py's other pages: this page's Inductor compiles and
minifier take as long as those four pages together, and xdist (``--dist loadfile``) can only
put two files, not two tests of one file, on two workers.
"""

from __future__ import annotations

import importlib.util

import doc_console  # tests/doc_console.py
import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None
PAGE = "examples/compile/README.md"


@pytest.mark.slow
def test_every_command_the_compile_page_shows_prints_what_the_page_shows(tmp_path, request):
    failures = doc_console.run_named_page(PAGE, tmp_path, runtime=HAS_TORCH,
                                          inductor_cache=doc_console.shared_inductor_cache(request.config))
    assert not failures, f"{PAGE} is stale (python tests/doc_console.py {PAGE} shows the real output):\n" + "\n".join(map(str, failures))
