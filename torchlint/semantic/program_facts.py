"""What kind of file a path and its text are: a test module, an entry script, library code.

Rules ask these instead of matching paths themselves, so every rule draws the line between
tests, scripts and libraries in the same place. Never imports torch.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

_TEST_FILE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test|conftest)\.py$|(^|/)(tests?|testing)/")


def is_test_path(path: str) -> bool:
    """A test module or a test helper: pytest's and unittest's file names (`test_*.py`,
    `*_test.py`, `conftest.py`) or a file under a `test/`, `tests/` or `testing/` folder.
    Tests run where they are written and fail loudly there; they are deliberately GPU-specific
    and deliberately keep values around to compare them."""
    return _TEST_FILE.search(PurePosixPath(path).as_posix()) is not None


# `(?:^|(?<=\r))`: a line starts after "\n" (re's `^`) or after a lone "\r", as Python's do.
_SCRIPT_IMPORTS = re.compile(r"(?:^|(?<=\r))[ \t\f]*(?:import|from)\s+(argparse|click|fire|typer|hydra|absl)\b", re.MULTILINE)
_MAIN_GUARD = re.compile(r"""(?:^|(?<=\r))if\s+__name__\s*==\s*['"]__main__['"]\s*:""", re.MULTILINE)


def is_script(path: str, text: str) -> bool:
    """An entry script rather than library code: it has a `__main__` guard, parses its
    command line, is a `__main__.py`/`setup.py`, or is a test. Scripts may pick the machine
    they run on; libraries may not."""
    name = PurePosixPath(path).name
    if name in ("__main__.py", "setup.py") or is_test_path(path):
        return True
    return bool(_MAIN_GUARD.search(text) or _SCRIPT_IMPORTS.search(text))
