"""The rest of the given files' projects: the files a check reads for their cross-file facts
and project tokens, and reports nothing about.

A file's findings must not depend on which other files are on the command line: pre-commit
passes only the staged ones, an editor has one open, CI checks the tree. So a check of some
files also reads every other file of their project (found as `torchlint check` run in the
project's root finds them: the same excludes and .gitignore files) and the project phase sees
the whole project whatever was named. Their per-file results come from the cache when fresh,
so a warm pre-commit run pays for little more than reading and hashing them.
"""

from __future__ import annotations

import os
from pathlib import Path

from torchlint.config import Config
from torchlint.static.discover import Discovered, walk_files
from torchlint.static.roots import RootFinder

#: A project with more files than this is not read around the given files (they are checked
#: on their own, and a warning says so): a marker in a home folder or a monorepo's top would
#: otherwise make every pre-commit run read the whole tree.
MAX_PROJECT_FILES = 10_000


def _key(path: Path) -> str:
    return os.path.normpath(os.path.abspath(path))


def rest_of_projects(
    paths: list[Path], given: list[Discovered], config: Config, *, cwd: Path, finder: RootFinder, warnings: list[str] | None = None
) -> list[Discovered]:
    """The files of the projects holding `given` (the files `paths` named or held) that are
    not among them, each belonging to the same project as the given file that led to it (a
    nested project, a folder under the root with its own marker, is another project). Files
    outside any project bring nothing. `warnings` collects why a project was not read."""
    seen = {_key(item.path) for item in given}
    # A folder named on the command line that holds a whole project was walked already.
    named_folders = [Path(_key(path)) for path in paths if path.is_dir()]
    roots = sorted({finder.of(item.path) for item in given if item.problem is None} - {""})
    rest: list[Discovered] = []
    for root in roots:
        top = Path(root)
        if any(folder == top or folder in top.parents for folder in named_folders):
            continue
        found = []
        for item in walk_files(top, config, cwd=cwd):
            if item.problem is None and _key(item.path) not in seen and finder.of(item.path) == root:
                found.append(item)
                if len(found) > MAX_PROJECT_FILES:
                    break  # a home folder's .git: stop walking, not after the whole tree
        if len(found) > MAX_PROJECT_FILES:
            if warnings is not None:
                warnings.append(
                    f"the project in {root} has more than {MAX_PROJECT_FILES} other files; checked the given files on their own "
                    "(cross-file findings may differ from a check of the whole project)"
                )
            continue
        for item in found:
            seen.add(_key(item.path))
            rest.append(item)
    return rest
