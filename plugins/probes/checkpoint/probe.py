"""Checkpoint probe: confirms TL301 by reading where a checkpoint's storages live, and TL302
by how ``torch.load`` without ``weights_only`` went under the torch that ran it.

For each ``torch.load`` without ``map_location``, the probe reads the storage location tags
(``cuda:0``, ``cpu``) from the file before torch does, without unpickling anything (see
``torchlint.runtime.checkpoint_locations``), then lets ``torch.load`` run as usual.

A load without ``weights_only`` confirms TL302 when it unpickled with ``weights_only=False``
(the default before torch 2.6: the file could have run any code) or when the
``weights_only=True`` default refused the file (and the program caught the error); it loaded
under that default otherwise, which is TL302 not reproduced on this torch.

A file this process saved itself (a round trip: save a model, load the best one back) still
confirms a TL301 finding, but is no TL706 where TL301 found nothing: TL301 leaves a save and
a load of the same name alone on purpose, and the load works wherever the save did.
"""

from __future__ import annotations

import functools
import io
import os
import re
from typing import Any

import torch
import torch.serialization

from torchlint.probe import Probe, storage_locations


class CheckpointProbe(Probe):
    name = "checkpoint"
    order = 40
    confirms = ("TL301", "TL302")
    runtime_code = "TL706"
    summary = "torch.load without map_location of a checkpoint holding CUDA storages"

    def install(self) -> None:
        self._originals = (torch.load, torch.serialization.load, torch.save, torch.serialization.save)
        self._saved_here: set[str] = set()
        original = torch.serialization.load
        original_save = torch.serialization.save

        @functools.wraps(original_save)
        def save(obj: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
            result = original_save(obj, f, *args, **kwargs)
            name = _file_name(f)
            if name is not None:
                self._saved_here.add(name)
            return result

        torch.save = torch.serialization.save = save

        @functools.wraps(original)
        def load(f: Any, *args: Any, **kwargs: Any) -> Any:
            confirmed = False
            if not args and "map_location" not in kwargs:
                try:
                    confirmed = self._inspect(f)
                except Exception as exc:  # never let the probe break a load
                    self.ctx.probe_crashed(self, "torch.load", exc)
            by_default = "weights_only" not in kwargs
            try:
                result = original(f, *args, **kwargs)
            except Exception as exc:
                if confirmed:  # "Attempting to deserialize object on a CUDA device" is this finding
                    self.ctx.explain(exc, "TL301")
                if by_default and _REFUSED in str(exc):
                    self._weights_only(f, kwargs, refused=exc)
                    self.ctx.explain(exc, "TL302")
                raise
            if by_default:
                self._weights_only(f, kwargs)
            return result

        torch.load = torch.serialization.load = load

    def uninstall(self) -> None:
        torch.load, torch.serialization.load, torch.save, torch.serialization.save = self._originals

    def _weights_only(self, f: Any, kwargs: dict, refused: BaseException | None = None) -> None:
        """TL302 at a load that left ``weights_only`` to torch's default."""
        site = self.ctx.site()
        where = f" at {site.short()}" if site else ""
        name = _display_name(f)
        version = torch.__version__.split("+")[0]
        if refused is not None:
            self.ctx.evidence(self, code="TL302", at=site, sites=[site], confirm_only=True,
                              message=f"`torch.load`{where} of {name} failed under torch {version}'s default "
                                      f"weights_only=True: {_refusal(refused)}",
                              data={"weights_only": True, "torch": version})
        else:
            weights_only, why = _default_weights_only(kwargs, version)
            if weights_only:
                self.ctx.observed(self, "TL302", site,
                                  f"{name} loaded under {why} weights_only=True: it holds only what that loader accepts")
            else:
                self.ctx.evidence(self, code="TL302", at=site, sites=[site], confirm_only=True,
                                  message=f"`torch.load`{where} unpickled {name} with weights_only=False ({why}): "
                                          "a file from elsewhere could have run any code",
                                  data={"weights_only": False, "torch": version})

    def _inspect(self, f: Any) -> bool:
        """Report what the checkpoint holds; True when it holds CUDA storages."""
        site = self.ctx.site()
        locations = _locations_of(f)
        if locations is None:
            self.ctx.observed(self, "TL301", site, "the checkpoint's storage locations could not be read")
            return False
        cuda = {loc: n for loc, n in locations.items() if loc.startswith("cuda")}
        if not cuda:
            held = f"holds {', '.join(sorted(locations))} storages only" if locations else "holds no tensor storages"
            self.ctx.observed(self, "TL301", site, f"this checkpoint {held}; one saved on a GPU would not load on a CPU machine")
            return False
        summary = ", ".join(f"{n} storage{'s' * (n != 1)} on {loc}" for loc, n in sorted(cuda.items()))
        where = f" at {site.short()}" if site else ""
        path = _file_name(f)
        name = _display_name(f)
        round_trip = path is not None and path in self._saved_here
        self.ctx.evidence(
            self,
            code="TL301",
            at=site,
            sites=[site],
            message=f"`torch.load`{where} without map_location read {name}, which holds {summary}: "
                    "this fails on a machine without that GPU" + (" (this run saved it)" if round_trip else ""),
            data={"locations": locations, "saved_by_this_run": round_trip},
            confirm_only=round_trip,
        )
        return True


#: How torch >= 2.6 words a checkpoint its weights_only loader refuses.
_REFUSED = "Weights only load failed"


#: The reason inside torch's refusal, after two paragraphs of advice (and terminal escapes).
_REASON = re.compile(r"WeightsUnpickler error: (.+?\.)(?:\s|$)")


def _refusal(error: BaseException) -> str:
    """`Weights only load failed (Unsupported global: GLOBAL numpy...reconstruct was not an
    allowed global by default.)`: torch's verdict and its reason, on one line."""
    reason = _REASON.search(str(error))
    return f"{_REFUSED} ({reason.group(1)})" if reason else _REFUSED


def _default_weights_only(kwargs: dict, version: str) -> tuple[bool, str]:
    """What ``torch.load`` without ``weights_only`` loads with here, and why: torch 2.6 and
    newer default to True, unless ``pickle_module`` or torch's environment variables say
    otherwise (read as ``torch.serialization.load`` reads them)."""
    truthy = ("1", "y", "yes", "true")
    if os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in truthy:
        return True, "TORCH_FORCE_WEIGHTS_ONLY_LOAD's"
    if os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in truthy:
        return False, "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD is set"
    if kwargs.get("pickle_module") is not None:
        return False, "a pickle_module was given"
    release = re.match(r"(\d+)\.(\d+)", torch.__version__)
    if release is not None and (int(release[1]), int(release[2])) >= (2, 6):
        return True, f"torch {version}'s default"
    return False, f"torch {version}'s default"


def _display_name(f: Any) -> str:
    path = _file_name(f)
    return os.path.basename(path) if path else type(f).__name__


def _file_name(f: Any) -> str | None:
    """The real path of a checkpoint given as a path or an open file, else None."""
    if isinstance(f, (str, os.PathLike)):
        name = os.fspath(f)
    else:
        name = getattr(f, "name", None)
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    return os.path.realpath(name) if isinstance(name, str) and name else None


def _locations_of(f: Any) -> dict[str, int] | None:
    if isinstance(f, (str, os.PathLike)):
        try:
            stream = open(f, "rb")
        except OSError:
            return None  # a missing or unreadable file: torch.load raises its own error, not a probe crash
        with stream:
            return storage_locations(stream)
    if isinstance(f, io.IOBase) and f.seekable():
        position = f.tell()
        try:
            return storage_locations(f)
        finally:
            f.seek(position)
    return None


PROBE = CheckpointProbe
