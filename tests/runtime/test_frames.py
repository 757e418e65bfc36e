"""Which frame is the user's (``runtime.frames``): the sites every probe event carries."""

from __future__ import annotations

import os
import sys

from torchlint.runtime.frames import FrameClassifier, Site


def test_a_user_line_seen_again_gives_the_same_site_object():
    frames = FrameClassifier([])

    def where() -> Site | None:
        return frames.user_site(sys._getframe(1))

    seen = []
    for _ in range(2):
        seen.append(where())  # one line, twice
    other = where()
    first, again = seen
    assert first == Site(os.path.abspath(__file__), first.line, "test_a_user_line_seen_again_gives_the_same_site_object")
    # Probes keep one per saved tensor until backward: a long forward must not make one each.
    assert again is first
    assert other == Site(__file__, first.line + 1, first.function) and other is not first
