"""Is a helper that its own file never calls on a device path the project shows? TL201's
project phase asks this of a finding in such a helper (a latent finding: its factory meets
its own tensor parameter, and whether that tensor is ever on a device depends on callers the
file does not hold).

The callers are looked up by name in every checked file of the project, read by a rule or
not (`ProjectContext.files_naming`): a caller in a file with no tensor factory, which the
rule never parses, still counts. A helper is off the device path when

* every other file that names it calls it only while building batches (a dataset's
  `__getitem__`, a collate function: CPU data), and it is not part of an installable
  package, whose users may call it with anything;
* or nothing else names it, and it is a module-level helper of a script run as `__main__`
  outside any package (a copy left behind);
* or it is a method of a class that is no `nn.Module`, in a file outside any package, and no
  other file names both the method and the class or its module (a community pipeline's
  uncalled copy of another pipeline's helper: the other pipelines that name the helper call
  their own copy).

When the index cannot tell (no token index), the finding stays.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

#: Files that make a project folder installable: its packages are a library others import.
INSTALL_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg")


def off_device_path(project, path: str, fact: dict, code: str) -> bool:
    """`fact`: what the rule recorded about the helper (`function`, `kind`, `script`)."""
    name = fact["function"]
    naming = project.files_naming(name, near=path)
    if naming is None:
        return False
    # Files that define their own copy and call only it are no callers of this one.
    others = frozenset(f for f in naming - {path} if not _calls_only_own_copy(project, f, name, fact.get("kind") == "method"))
    in_package = "." in project.module_names.get(path, "")
    if fact.get("kind") == "method":
        return not in_package and not _callers_of_method(project, path, fact, others)
    # Every other file must have been read and show each of its calls as batch building.
    if not all(name in project.facts.get(other, {}).get(code, {}).get("cpu_calls", ()) for other in others):
        return False
    if others:
        return not (in_package and _installable(project.roots.get(path, "")))
    return fact["script"] and not in_package


def _callers_of_method(project, path: str, fact: dict, naming_method: frozenset[str]) -> frozenset[str]:
    """The other files that name the method and also its class or its module (an import,
    or a pipeline loaded by its file's name): code that calls a method of this file's class
    holds an instance it made from the class it names. (A file that only receives such an
    instance from another is not seen: a limitation of matching by name.)"""
    if not naming_method:
        return frozenset()
    naming_owner = project.files_naming(fact["class"], near=path) | project.files_naming(PurePosixPath(path).stem, near=path)
    return naming_method & naming_owner


def _calls_only_own_copy(project, path: str, name: str, method: bool) -> bool:
    """The file defines its own `name` and names it nowhere but in that definition, in its
    own calls (`self.name(...)` for a method, `name(...)` for a function) and on comment
    lines: its calls reach its own copy (diffusers' pipelines and training scripts each copy
    `get_guidance_scale_embedding`, with a "# Copied from ..." line)."""
    word = re.escape(name.encode())
    whole = rb"(?<![A-Za-z0-9_])" + word + rb"(?![A-Za-z0-9_])"
    mentions = project.count_in(path, re.compile(whole))
    defined = project.count_in(path, re.compile(rb"\bdef\s+" + word + rb"\s*\("))
    if mentions is None or not defined:
        return False
    if method:
        calls = defined + project.count_in(path, re.compile(rb"\bself\s*\.\s*" + word + rb"\s*\("))
    else:
        calls = project.count_in(path, re.compile(rb"(?<![A-Za-z0-9_.])" + word + rb"\s*\("))  # `def name(` too
    in_comments = project.count_in(path, re.compile(rb"(?m)^[ \t]*#[^\n]*" + whole))
    return mentions == calls + in_comments


def _installable(root: str) -> bool:
    if not root:
        return False
    folder = Path(root)
    return any((folder / marker).exists() for marker in INSTALL_MARKERS)
