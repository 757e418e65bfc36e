"""A part of the model the configuration names as frozen that trains all the same (TL756).

A script's settings say ``freeze_encoder=True``; the method that would set the encoder's
``requires_grad`` to False (``model.freeze_encoder()``) is never called, or is called on
another object. At the first optimizer step, the settings in reach of the stepping line (an
``argparse.Namespace``, a dataclass, a ``SimpleNamespace``, a dict, a ``...Config`` object,
and those held by ``self``) are read for true ``freeze_<part>``/``<part>_frozen`` keys, and
``<part>`` is looked up among the submodules of the models in reach.
"""

from __future__ import annotations

import dataclasses
import re
import types
from typing import Any, Iterable

from torch import nn

from torchlint.probe import USER, FrameClassifier, frame_locals

FROZEN_KEY = re.compile(r"^(?:freeze|frozen|fix)_(?P<part>[a-z]\w*)$|^(?P<part2>[a-z]\w*)_(?:frozen|freeze)$", re.IGNORECASE)
#: Class names of settings objects (`TrainConfig`, `Args`, `Hyperparameters`).
SETTINGS_CLASS = re.compile(r"(?:Config|Configuration|Args|Arguments|Options|Settings|Params|Hyperparameters|Hparams)$")


@dataclasses.dataclass
class Unapplied:
    key: str  # `args.freeze_encoder`
    part: str  # `Net.encoder`
    parameters: int
    method: str | None  # `Net.freeze_encoder`, when the model has such a method


def unapplied_freezes(frames: FrameClassifier, frame: Any, roots: list[tuple[str, nn.Module]], held: set[int]) -> list[Unapplied]:
    """Settings that name a part of a model in reach as frozen, while every parameter of that
    part requires grad and some are held by the stepping optimizer."""
    found: list[Unapplied] = []
    seen: set[str] = set()
    for owner, key in _frozen_keys(frames, frame):
        part = key.group("part") or key.group("part2")
        for label, model in roots:
            for path, module in model.named_modules():
                if not path or path.rsplit(".", 1)[-1].lower() != part.lower() or f"{label}.{path}" in seen:
                    continue
                params = list(module.parameters())
                if params and all(p.requires_grad for p in params) and any(id(p) in held for p in params):
                    seen.add(f"{label}.{path}")
                    method = next((name for name in dir(type(model)) if "freeze" in name.lower() and "unfreeze" not in name.lower()
                                   and callable(getattr(type(model), name, None))), None)
                    found.append(Unapplied(f"{owner}.{key.string}", f"{label}.{path}", len(params),
                                           f"{label}.{method}" if method else None))
    return found


def _frozen_keys(frames: FrameClassifier, frame: Any) -> Iterable[tuple[str, re.Match]]:
    """(name of the settings object, the matched key) for each true frozen key in reach."""
    visited: set[int] = set()
    while frame is not None:
        if frames.verdict(frame.f_code.co_filename) == USER:
            for name, value in frame_locals(frame).items():
                yield from _keys_of(name, value, visited)
                if name == "self" and hasattr(value, "__dict__"):
                    for attribute, held in list(vars(value).items()):
                        yield from _keys_of(f"self.{attribute}", held, visited)
        frame = frame.f_back


def _keys_of(name: str, value: Any, visited: set[int]) -> Iterable[tuple[str, re.Match]]:
    if id(value) in visited or not _is_settings(value):
        return
    visited.add(id(value))
    items = value.items() if isinstance(value, dict) else _attributes(value)
    for key, setting in items:
        if setting is True and isinstance(key, str):
            match = FROZEN_KEY.match(key)
            if match:
                yield name, match


def _is_settings(value: Any) -> bool:
    if isinstance(value, (types.SimpleNamespace, dict)) or type(value).__name__ == "Namespace":
        return True
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return True
    return bool(SETTINGS_CLASS.search(type(value).__name__)) and hasattr(value, "__dict__")


def _attributes(value: Any) -> list[tuple[str, Any]]:
    try:
        return list(vars(value).items())
    except TypeError:
        return []
