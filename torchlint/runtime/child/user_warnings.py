"""torch's warnings at the user's line, and handed to the probes; child process only.

A warning torch raises inside an operation is attributed to the innermost Python frame (a
C++ ``TORCH_WARN``) or to a frame ``stacklevel`` frames up (``F.softmax``, ``F.mse_loss``).
Under `torchlint run` that frame is torchlint's own: the ``TorchFunctionMode`` every probe
goes through, or the fake-cuda mode. Python then shows ``torchlint/runtime/child/probing.py:198:
UserWarning: ...``, and its once-per-location filter shows a warning raised at two user
lines only once, since both "happened" at the same torchlint line.

So, while the target runs:

* a filter pinned first in ``warnings.filters`` (``"always"`` for torch's and torchlint's
  modules) lets every warning attributed to them through, whatever the program's own filters;
* ``warnings._showwarnmsg`` (what the interpreter calls to show any warning, whoever
  replaced ``showwarning``) hands each warning to the probes with the user line that caused
  it, then issues it again at that line with ``warnings.warn_explicit`` (a warning
  attributed to torch too: ``nn.Softmax()`` without ``dim`` warns from a line of torch that
  our frames shift). The program's own filters (``ignore``, ``error``), the once-per-location
  registry of the user's module and the source line shown are then those of a plain
  ``python train.py`` run; a filter on torch's module names no longer matches, since the
  warning is now the user's module's. Deprecation warnings, which Python hides unless they
  are attributed to ``__main__``, go where Python would have put them without torchlint's
  frames instead (the frame that called torchlint's; torch's own line), so that the ones a
  plain run hides stay hidden.

Probes see a warning even when the program ignores warnings (``filterwarnings("ignore")`` at
the top of a script is common, and hides exactly these bugs). ``catch_warnings`` blocks with
their own filters, and a program that calls ``resetwarnings()``, may hide a warning from
them: the pinned filter is the only way in.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import warnings
from dataclasses import dataclass
from types import FrameType
from typing import Any, Callable

from torchlint.runtime.frames import LIBRARY, USER, FrameClassifier, Site

#: torchlint's own modules (``torchlint.runtime.child.probing``, ``torchlint.plugins.probes.device``)
#: and torch's (``torch.nn.functional``), whose warnings pass the pinned filter.
PINNED_MODULES = re.compile(r"(?:torch|torchlint)(?:\.|$)")


def _hidden_by_torch() -> bool:
    """Whether torch is hiding warnings here (``torch._logging.hide_warnings``, which replaces
    ``warnings.showwarning`` around its own internals, never around the program's code)."""
    return getattr(warnings.showwarning, "__module__", "").startswith("torch.")


@dataclass(frozen=True)
class TargetWarning:
    """A warning the target triggered, as probes receive it."""

    message: str
    category: type
    site: Site | None  # the innermost user line on the stack (a library's, failing that)
    frame: FrameType | None  # where the warning was raised (walk ``f_back`` to see who called)


class _PinMatcher:
    """The pinned filter's module pattern; matches nothing while a warning is issued again."""

    def __init__(self, local: threading.local) -> None:
        self._local = local

    def match(self, module: str) -> Any:
        return None if getattr(self._local, "reissuing", False) else PINNED_MODULES.match(module)

    def __repr__(self) -> str:
        return f"re.compile({PINNED_MODULES.pattern!r})"


class _PinnedFilters(list):
    """``warnings.filters`` with our entry kept first: ``filterwarnings`` inserts at index 0."""

    pin: tuple = ()

    def insert(self, index: int, item: Any) -> None:  # type: ignore[override]
        if index == 0 and self and self[0] is self.pin and item is not self.pin:
            index = 1
        super().insert(index, item)


class UserWarnings:
    """Installed around the target's run by the child."""

    def __init__(self, frames: FrameClassifier, own_dirs: list[str], torch_dir: str,
                 listener: Callable[[TargetWarning], None]) -> None:
        self.frames = frames
        self._own = tuple(os.path.join(os.path.realpath(d), "") for d in own_dirs)
        self._moved = (*self._own, os.path.join(os.path.realpath(torch_dir), ""))
        self._own_verdicts: dict[str, bool] = {}
        self._moved_verdicts: dict[str, bool] = {}
        self.listener = listener
        self._local = threading.local()
        self._saved: tuple[Any, Any] | None = None

    def install(self) -> None:
        pin = ("always", None, Warning, _PinMatcher(self._local), 0)
        filters = _PinnedFilters([pin, *warnings.filters])
        filters.pin = pin
        self._saved = (warnings._showwarnmsg, warnings.filters)  # type: ignore[attr-defined]
        warnings.filters = filters
        warnings._filters_mutated()  # type: ignore[attr-defined]
        warnings._showwarnmsg = self._show  # type: ignore[attr-defined]

    def uninstall(self) -> None:
        if self._saved is None:
            return
        show, _ = self._saved
        self._saved = None
        warnings._showwarnmsg = show  # type: ignore[attr-defined]
        # What the program added meanwhile stays; only our pin goes (from whatever list holds it).
        warnings.filters = [item for item in warnings.filters if not (isinstance(item, tuple) and len(item) > 3
                                                                      and isinstance(item[3], _PinMatcher))]
        warnings._filters_mutated()  # type: ignore[attr-defined]

    # -- the interpreter's hook ---------------------------------------------------------------
    def _original(self, msg: Any) -> None:
        show = self._saved[0] if self._saved else warnings._showwarnmsg_impl  # type: ignore[attr-defined]
        show(msg)

    def _show(self, msg: Any) -> None:
        if getattr(self._local, "reissuing", False):
            self._original(msg)  # our own second issue of a warning, at the user's line
            return
        try:
            raised_in = sys._getframe(1)
            if _hidden_by_torch():
                # torch.compile's machinery hiding what it raises itself (Dynamo probing a
                # tensor's `.grad`): torch decides, as without us, and no user line caused it.
                self._original(msg)
                return
            site = self.frames.user_site(raised_in)
            self.listener(TargetWarning(str(msg.message), msg.category, site, raised_in))
            at = line = None
            if self._is_moved(msg.filename):
                hidden_by_default = issubclass(msg.category, (DeprecationWarning, PendingDeprecationWarning))
                at = None if hidden_by_default else self._user_frame(raised_in)
                if at is not None:
                    line = at.f_lineno
                elif self._is_own(msg.filename):
                    # Where Python would have put it without our frames: the frame that called us.
                    at = self._outside_own(raised_in)
                    line = at.f_lineno if at is not None else None
                else:  # torch's line, as without torchlint, but through the program's filters
                    at, line = self._frame_of(raised_in, msg.filename), msg.lineno
        except Exception:
            at = None
        if at is None:
            self._original(msg)
            return
        globals_ = at.f_globals
        self._local.reissuing = True
        try:
            # May raise: the program's "error" filter turns the warning into its exception here,
            # as it would have been without us.
            warnings.warn_explicit(msg.message, msg.category, at.f_code.co_filename, line,
                                   module=globals_.get("__name__") or "<string>",
                                   registry=globals_.setdefault("__warningregistry__", {}),
                                   module_globals=_loadable(globals_), source=msg.source)
        finally:
            self._local.reissuing = False

    def _outside_own(self, frame: FrameType | None) -> FrameType | None:
        """The first frame, going out, past the innermost run of torchlint's own frames."""
        while frame is not None and not self._is_own(frame.f_code.co_filename):
            frame = frame.f_back
        while frame is not None and self._is_own(frame.f_code.co_filename):
            frame = frame.f_back
        return frame

    def _is_own(self, filename: str) -> bool:
        verdict = self._own_verdicts.get(filename)
        if verdict is None:
            verdict = self._own_verdicts[filename] = os.path.realpath(filename).startswith(self._own)
        return verdict

    @staticmethod
    def _frame_of(frame: FrameType | None, filename: str) -> FrameType | None:
        while frame is not None:
            if frame.f_code.co_filename == filename:
                return frame
            frame = frame.f_back
        return None

    def _is_moved(self, filename: str) -> bool:
        """Whether a warning attributed to this file moves to the user's line: torch's and ours."""
        verdict = self._moved_verdicts.get(filename)
        if verdict is None:
            verdict = self._moved_verdicts[filename] = os.path.realpath(filename).startswith(self._moved)
        return verdict

    def _user_frame(self, frame: FrameType | None) -> FrameType | None:
        """The innermost user frame; failing that the innermost library frame outside torch."""
        fallback = None
        while frame is not None:
            verdict = self.frames.verdict(frame.f_code.co_filename)
            if verdict == USER:
                return frame
            if verdict == LIBRARY and fallback is None:
                fallback = frame
            frame = frame.f_back
        return fallback


def _loadable(module_globals: dict) -> dict | None:
    """The globals for ``warn_explicit`` to read the warning's source line through, or None
    (linecache then reads the file by name). The script ``runpy.run_path`` runs as
    ``__main__`` has neither ``__loader__`` nor ``__spec__``, and from Python 3.12
    ``warn_explicit`` raises ValueError ("Module globals is missing a __spec__.loader") for
    such globals instead of warning."""
    spec = module_globals.get("__spec__")
    if module_globals.get("__loader__") is None and getattr(spec, "loader", None) is None:
        return None
    return module_globals
