"""Where a rule's documentation opens from an editor: the `codeDescription` link of a
diagnostic and the "Open the docs" action.

torchlint has no hosted documentation, so the link is a local file: the generated page in
docs/rules/ of a source checkout when it exists, otherwise the same page rendered from the
rule's metadata into the user's cache folder (third-party rules have no page of their own).
A `docsUrl` template from the editor's settings (`https://example.org/rules/{code}.html`)
replaces both.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from torchlint import __version__

if TYPE_CHECKING:
    from torchlint.rule import Rule

_SOURCE_DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules"


def _cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "torchlint" / "rules" / __version__


def docs_uri(rule: type[Rule], template: str | None = None) -> str:
    if template:
        return template.format(code=rule.code, name=rule.name)
    page = _SOURCE_DOCS / f"{rule.code}.md"
    if rule.__module__.startswith("torchlint.") and page.is_file():
        return page.as_uri()
    return _rendered(rule).as_uri()


def _rendered(rule: type[Rule]) -> Path:
    from torchlint.atomic import write_atomic
    from torchlint.ruledoc import render_markdown

    text = render_markdown(rule)
    page = _cache_folder() / f"{rule.code}.md"
    try:
        if not page.is_file() or page.read_text(encoding="utf-8") != text:
            page.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(page, text)
    except OSError:
        pass  # a read-only home: the link still names the page, it just does not open
    return page
