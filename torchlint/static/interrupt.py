"""Giving up on a check whose text is already out of date.

The language server checks a document while the user may still be typing. When the text
changes again, the check under way can only produce diagnostics nobody will see, and the
next one waits for it. The server passes the engine a callable that raises CheckInterrupted
once the text has changed; the engine calls it between top-level statements and between the
rules' `finish()`, so a check stops within one statement's work.
"""

from __future__ import annotations


class CheckInterrupted(BaseException):
    """Raised to abandon a check. A BaseException, like KeyboardInterrupt: the handlers that
    keep one failing rule from stopping the others catch `Exception`, and must not catch
    this."""
