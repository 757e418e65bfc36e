"""Processes the program starts itself, which torchlint's probes do not reach; child only.

A ``multiprocessing.Process`` (Hogwild training, ``torch.multiprocessing.spawn``) starts an
interpreter of its own: no probe watches it, and under ``--device fake-cuda`` it sees no
simulated GPU (it fails with "Torch not compiled with CUDA enabled" where the main process
trained on "cuda"). The report must not call such a run a quiet success: each place that
started processes is recorded with their exit codes, and the parent reports the ones that
failed (TL702) and notes the others.

DataLoader workers are left out: they load data, which no probe checks anyway.
"""

from __future__ import annotations

import multiprocessing.process
import os
import sys
import threading
from typing import Any

from torchlint.runtime.frames import USER, FrameClassifier

#: At most this many processes are kept for their exit codes (a program may start thousands).
KEPT = 256


class ProcessWatch:
    def __init__(self, frames: FrameClassifier, torch_dir: str) -> None:
        self.frames = frames
        self._data_loading = os.path.join(os.path.realpath(torch_dir), "utils", "data", "")
        self._mp = os.path.join(os.path.dirname(os.path.realpath(multiprocessing.process.__file__)), "")
        self._original: Any = None
        self._started: dict[tuple[str, int], list[Any]] = {}
        self._counts: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()

    def install(self) -> None:
        original = self._original = multiprocessing.process.BaseProcess.start
        watch = self

        def start(process: Any) -> None:
            original(process)
            try:
                watch._note(process, sys._getframe(1))
            except Exception:  # never let the watch break the program's process
                pass

        multiprocessing.process.BaseProcess.start = start  # type: ignore[method-assign]

    def uninstall(self) -> None:
        if self._original is not None:
            multiprocessing.process.BaseProcess.start = self._original  # type: ignore[method-assign]
            self._original = None

    def _note(self, process: Any, frame: Any) -> None:
        # The first frame outside multiprocessing says who asked: a DataLoader's workers are
        # torch.utils.data's; torch.multiprocessing.spawn's are the program's.
        while frame is not None and os.path.realpath(frame.f_code.co_filename).startswith(self._mp):
            frame = frame.f_back
        if frame is None or os.path.realpath(frame.f_code.co_filename).startswith(self._data_loading):
            return
        site = self.frames.user_site(frame)
        if site is None or self.frames.verdict(site.path) != USER:
            return
        key = (site.path, site.line)
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + 1
            kept = self._started.setdefault(key, [])
            if len(kept) < KEPT:
                kept.append(process)

    def summary(self) -> list[dict[str, Any]]:
        """Per line that started processes: how many, and the exit codes of those that ended
        (None: still running when the program finished)."""
        result = []
        for key, count in self._counts.items():
            codes = []
            for process in self._started.get(key, ()):
                try:
                    codes.append(process.exitcode)
                except Exception:  # a process object the program took apart
                    codes.append(None)
            result.append({"at": list(key), "started": count, "exit_codes": codes})
        return result
