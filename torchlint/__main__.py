"""`python -m torchlint`. Python put the working folder first on sys.path; inside a checked
tree that is untrusted code, whose own `click.py` or `pluggy.py` would be imported in place of
torchlint's dependencies. torchlint itself is imported already, so the folder can go."""

import os
import sys

if sys.path and sys.path[0] in ("", os.curdir) or (sys.path and os.path.realpath(sys.path[0]) == os.path.realpath(os.getcwd())):
    del sys.path[0]

from torchlint.cli import main  # noqa: E402

main()
