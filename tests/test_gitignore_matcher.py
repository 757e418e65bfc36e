"""The .gitignore matcher agrees with git on what it ignores, and stays linear-ish on
patterns built to make a backtracking matcher hang (repeated `**/`) or crash (`[]`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchlint.static.gitignore import GitIgnore, parse_patterns

PATTERNS = [
    "*.log", "build/", "/top.py", "docs/**/*.md", "**/cache", "a/**/b", "x/**", "!keep.log",
    "[abc].py", "[!d]x.py", "[a-c]range.py", "q?.py", "name\\*.py", "**/**/**/deep.py", "[]", "[]x].py",
    "lit[", "sp ace.py", "***.tmp", "sub/*.py",
]
PATHS = [
    "app.log", "keep.log", "sub/app.log", "build/out.py", "src/build/x.py", "top.py", "src/top.py",
    "docs/a/b/c.md", "docs/c.md", "docs/c.txt", "cache/x.py", "z/cache/y.py", "a/b/f.py", "a/q/r/b/g.py",
    "x/y/z.py", "a.py", "d.py", "bx.py", "dx.py", "brange.py", "drange.py", "q1.py", "q12.py", "name*.py",
    "namex.py", "1/2/deep.py", "deep.py", "]x.py", "x.py", "lit[", "sp ace.py", "a.tmp", "sub/m.py", "sub/s/m.py",
]


@pytest.mark.skipif(shutil.which("git") is None, reason="compared with git itself")
def test_the_matcher_ignores_what_git_ignores(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=60)
    (tmp_path / ".gitignore").write_text("\n".join(PATTERNS) + "\n")
    for path in PATHS:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    answer = subprocess.run(["git", "check-ignore", "--stdin"], cwd=tmp_path, input="\n".join(PATHS) + "\n",
                            capture_output=True, text=True, timeout=60)
    by_git = set(answer.stdout.split("\n")) - {""}
    matcher = GitIgnore()
    matcher.load_dir(tmp_path)
    ours = set()
    for path in PATHS:
        # git ignores a file when it or a folder above it is ignored
        parts = Path(path).parts
        folders = [tmp_path.joinpath(*parts[:k]) for k in range(1, len(parts))]
        if any(matcher.ignored(folder, True) for folder in folders) or matcher.ignored(tmp_path / path, False):
            ours.add(path)
    assert ours == by_git


def test_repeated_double_stars_do_not_hang_and_an_empty_class_does_not_crash():
    # In a subprocess with a timeout: a backtracking matcher takes hours on this, not seconds.
    code = (
        "from pathlib import Path\n"
        "from torchlint.static.gitignore import parse_patterns\n"
        "patterns = parse_patterns('**/' * 40 + 'x\\n[]\\n[\\n')\n"
        "path = '/'.join(['d'] * 60) + '/y'\n"
        "print(sum(bool(p.regex.match(path)) for p in patterns))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"


def test_an_unterminated_class_ignores_nothing():
    assert parse_patterns("[abc\n") == []
