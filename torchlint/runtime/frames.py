"""Which stack frame is the user's: the first one outside torch, torchlint and libraries.

Every probe event carries the user line that caused it. Walking the stack is cheap when the
verdict for each file name is cached; this runs inside the child only.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import sysconfig
from types import FrameType
from typing import Any, NamedTuple

USER, LIBRARY, INTERNAL = 0, 1, 2


#: Notebooks run as scripts: absolute path -> joined line -> (cell, line in cell). Set by the
#: child before it runs a notebook, so every message names the cell a user sees.
CELL_MAPS: dict = {}


class Site(NamedTuple):
    path: str  # absolute
    line: int
    function: str

    def short(self) -> str:
        cells = CELL_MAPS.get(self.path)
        if cells is not None:
            cell, line = cells(self.line)
            return f"{os.path.basename(self.path)}:cell {cell}:{line}"
        return f"{os.path.basename(self.path)}:{self.line}"


#: `co_flags` of a function's code: its locals live in the frame, not in a dict.
_CO_OPTIMIZED = 0x0001


def frame_locals(frame: FrameType) -> dict[str, Any]:
    """A copy of a frame's local variables that leaves nothing alive behind it.

    Before Python 3.13, ``frame.f_locals`` of a function's frame is a dict cached on the
    frame: every local as it was when read, held until the next read or until the function
    returns. A probe that read the training function's locals at step 1 kept step 1's batch,
    outputs and loss alive for the rest of the run (a GPU program's logits, too). So the
    cache is emptied once copied; the next ``locals()`` or ``f_locals`` read fills it again,
    as every read does. Unless the program holds it: ``locals()`` returns that same dict, and
    ``hparams = locals()`` must not find it empty (then it holds those values anyway). From
    3.13 ``f_locals`` is a view of the frame and holds nothing."""
    names = frame.f_locals
    copy = dict(names)
    if (sys.version_info < (3, 13) and frame.f_code.co_flags & _CO_OPTIMIZED and isinstance(names, dict)
            and sys.getrefcount(names) <= _HELD_BY_THE_FRAME_ONLY):
        names.clear()
    return copy


#: `sys.getrefcount` of the cached locals in `frame_locals` when only the frame holds them:
#: the frame, the `names` variable and getrefcount's own argument.
_HELD_BY_THE_FRAME_ONLY = 3


#: The real path of each file name asked about. Every run asks about the same ~2,500 files of
#: torch, torchlint and the standard library it imported (the report's list of the files the
#: program imported): a warm server resolves them once for its forks (``remember_loaded_modules``).
_REAL_PATHS: dict[str, str] = {}


def real_path(filename: str) -> str:
    real = _REAL_PATHS.get(filename)
    if real is None:
        real = _REAL_PATHS[filename] = os.path.realpath(filename)
    return real


def remember_loaded_modules() -> None:
    """Resolve the file of every module imported so far (before forking runs)."""
    from torchlint.lazy import file_of

    for module in list(sys.modules.values()):
        path = file_of(module)
        if isinstance(path, str):
            real_path(path)


class FrameClassifier:
    def __init__(self, internal_dirs: list[str]) -> None:
        self._internal = tuple(os.path.join(os.path.realpath(d), "") for d in internal_dirs)
        library_dirs = _library_dirs()
        self._library = tuple(os.path.join(os.path.realpath(d), "") for d in library_dirs)
        self._verdicts: dict[str, int] = {}
        self._absolutes: dict[str, str] = {}
        #: One Site per user line: probes keep the site of every tensor autograd saves until
        #: backward (the autograd and memory probes one each), and a new tuple per call was
        #: as many objects again for the garbage collector's full passes to traverse.
        self._sites: dict[tuple, Site] = {}

    def treat_as_internal(self, filename: str) -> None:
        """A plugin's probe module, which may sit in the user's project (`plugins = [...]`):
        its frames are torchlint's, never the user line a finding points at."""
        self._verdicts[filename] = INTERNAL
        self._verdicts[os.path.realpath(filename)] = INTERNAL

    def verdict(self, filename: str) -> int:
        verdict = self._verdicts.get(filename)
        if verdict is None:
            real = real_path(filename) if not filename.startswith("<") else filename
            if filename.startswith("<") or real.startswith(self._internal) or real.startswith(generated_dirs()):
                verdict = INTERNAL
            elif real.startswith(self._library):
                verdict = LIBRARY
            else:
                verdict = USER
            self._verdicts[filename] = verdict
        return verdict

    def user_site(self, frame: FrameType | None = None) -> Site | None:
        """The innermost user frame; failing that the innermost library frame outside torch."""
        frame = frame or sys._getframe(1)
        fallback = None
        verdicts = self._verdicts
        while frame is not None:
            filename = frame.f_code.co_filename
            verdict = verdicts.get(filename)
            if verdict is None:
                verdict = self.verdict(filename)
            if verdict == USER:
                code = frame.f_code
                key = (filename, frame.f_lineno, code.co_name)
                site = self._sites.get(key)
                if site is None:
                    site = self._sites[key] = Site(self._absolute(filename), frame.f_lineno, code.co_name)
                return site
            if verdict == LIBRARY and fallback is None:
                fallback = frame
            frame = frame.f_back
        if fallback is None:
            return None
        return Site(self._absolute(fallback.f_code.co_filename), fallback.f_lineno, fallback.f_code.co_name)

    def _absolute(self, filename: str) -> str:
        absolute = self._absolutes.get(filename)
        if absolute is None:
            absolute = self._absolutes[filename] = os.path.abspath(filename)
        return absolute


def own_dirs() -> list[str]:
    """torchlint's folders (the engine and the built-in plugins)."""
    import torchlint

    dirs = [os.path.dirname(torchlint.__file__)]
    try:
        import torchlint.plugins as builtin_plugins

        dirs.extend(builtin_plugins.__path__)
    except ImportError:
        pass
    return dirs


def generated_dirs() -> tuple[str, ...]:
    """The folders of the code torch writes and runs (Inductor's cache: the compiled graphs'
    Python wrappers and kernels): its frames are torch's, never the user line a finding or a
    crash points at. Read each time (the program may set TORCHINDUCTOR_CACHE_DIR itself), and
    without importing Inductor (whose own helper creates the folder)."""
    import getpass
    import tempfile

    dirs = []
    configured = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if configured:
        dirs.append(configured)
    try:
        user = getpass.getuser()
    except (KeyError, ModuleNotFoundError, OSError):
        user = f"uid_{os.getuid()}" if hasattr(os, "getuid") else "unknown_user"
    dirs.append(os.path.join(tempfile.gettempdir(), "torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user)))
    return _real_dirs(tuple(dirs))


@functools.lru_cache(maxsize=8)
def _real_dirs(dirs: tuple[str, ...]) -> tuple[str, ...]:
    """Each folder resolved, with a trailing separator (asked once per file a frame names)."""
    return tuple(os.path.join(os.path.realpath(d), "") for d in dirs)


def _library_dirs() -> set[str]:
    """The standard library and every installed-packages folder: this interpreter's, and those
    reached through ``.pth`` files, ``--system-site-packages``, the user site or PYTHONPATH."""
    paths = sysconfig.get_paths()
    dirs = {paths.get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    try:
        import site

        dirs.update(site.getsitepackages())
        dirs.add(site.getusersitepackages())
    except (AttributeError, ImportError):  # a virtualenv's old site module
        pass
    dirs.update(entry for entry in sys.path if os.path.basename(entry.rstrip(os.sep)) in ("site-packages", "dist-packages"))
    return {d for d in dirs if d}


def default_classifier() -> FrameClassifier:
    import torch

    import torchlint

    dirs = [os.path.dirname(torch.__file__), os.path.dirname(torchlint.__file__)]
    try:
        import torchlint.plugins as builtin_plugins

        dirs.extend(builtin_plugins.__path__)
    except ImportError:
        pass
    return FrameClassifier(dirs)


def _without_dispatch_detours(stack: list) -> list:
    """A torch function that sees torchlint's TorchFunctionMode goes through
    ``handle_torch_function`` to the mode (torchlint's frames, already gone) and is called
    again: `f`, `handle_torch_function`, `f` again. Python shows `f` once: keep the second."""
    kept = []
    for index, frame in enumerate(stack):
        if frame.name == "handle_torch_function" and frame.filename.replace(os.sep, "/").endswith("torch/overrides.py"):
            before = kept[-1] if kept else None
            after = stack[index + 1] if index + 1 < len(stack) else None
            if before is not None and after is not None and (before.filename, before.name) == (after.filename, after.name):
                kept.pop()
                continue
        kept.append(frame)
    return kept


def format_user_exception(exc: BaseException, frames: FrameClassifier, hidden: tuple[str, ...]) -> str:
    """The traceback `python train.py` would print: from the target's first frame on, with no
    frame of torchlint's own (``hidden``: its folders) in it or in its chained exceptions."""
    import traceback

    hidden = tuple(os.path.join(os.path.realpath(d), "") for d in hidden)
    shown: dict[str, bool] = {}

    def keep(filename: str) -> bool:
        verdict = shown.get(filename)
        if verdict is None:
            verdict = shown[filename] = filename.startswith("<") or not os.path.realpath(filename).startswith(hidden)
        return verdict

    def clean(summary: traceback.TracebackException, top: bool, seen: set[int]) -> None:
        if id(summary) in seen:
            return
        seen.add(id(summary))
        stack = _without_dispatch_detours([frame for frame in summary.stack if keep(frame.filename)])
        if top:
            # Before the target's first frame: the child, runpy, the launcher.
            first = next((i for i, frame in enumerate(stack) if frames.verdict(frame.filename) == USER), None)
            stack = stack[first:] if first is not None else stack
        if stack or not summary.stack:
            summary.stack = traceback.StackSummary.from_list(stack)
        for chained in (summary.__cause__, summary.__context__, *(getattr(summary, "exceptions", None) or ())):
            if chained is not None:
                clean(chained, False, seen)

    summary = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    clean(summary, True, set())
    return "".join(summary.format())
