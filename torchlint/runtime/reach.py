"""The models a line of the user's program can reach: what probes name parameters by.

A probe that sees a parameter (an optimizer's, a gradient's) knows only the tensor. The user
knows it as ``Net.head.weight``. The models in reach of the running line are the modules in
the locals of the user's frames, and those held as attributes of their objects (a trainer's
``self.model``), walked from the innermost user frame out.
"""

from __future__ import annotations

from types import FrameType
from typing import Any

from torch import nn

from torchlint.runtime.frames import USER, FrameClassifier, frame_locals


def models_in_reach(frames: FrameClassifier, frame: FrameType | None) -> list[tuple[str, nn.Module]]:
    """``(label, module)`` for each model in reach of ``frame`` and the frames that called it,
    innermost first, each module once; the label is its class name.

    Values are judged by ``type(value)``, never ``isinstance``, which reads ``__class__``: a
    module-level frame holds the program's modules (``import torch.distributed as dist``), and
    reading a deprecated attribute of one (``dist.reduce_op``) warns at the user's line."""
    roots: list[tuple[str, nn.Module]] = []
    seen: set[int] = set()

    def add(value: Any) -> None:
        if issubclass(type(value), nn.Module) and id(value) not in seen:
            seen.add(id(value))
            roots.append((type(value).__name__, value))

    while frame is not None:
        if frames.verdict(frame.f_code.co_filename) == USER:
            for value in frame_locals(frame).values():
                kind = type(value)
                if issubclass(kind, nn.Module):
                    add(value)
                elif not issubclass(kind, type):
                    try:
                        attributes = list(vars(value).values())
                    except TypeError:
                        continue
                    for attribute in attributes:
                        add(attribute)
        frame = frame.f_back
    return roots


def parameter_names(roots: list[tuple[str, nn.Module]]) -> dict[int, str]:
    """id(parameter) -> its path in the first model in reach that holds it (``Net.head.weight``)."""
    names: dict[int, str] = {}
    for label, module in roots:
        for name, param in module.named_parameters():
            names.setdefault(id(param), f"{label}.{name}")
    return names


#: Names listed in a message before "and N more".
SHOWN = 6


def parameter_label(key: int, names: dict[int, str], params: dict[int, Any]) -> str:
    """What a message calls the parameter ``id`` ``key``: its path in a model in reach, else its
    shape (``params`` holds weak references), else "a parameter"."""
    name = names.get(key)
    if name is not None:
        return name
    param = params.get(key, lambda: None)()
    return f"a parameter of shape {tuple(param.shape)}" if param is not None else "a parameter"


def listed(labels: Any) -> str:
    """"`a`, `b` and 3 more": the labels sorted, the first SHOWN of them quoted."""
    names = sorted(labels)
    shown = ", ".join(f"`{name}`" for name in names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def counted(keys: Any) -> str:
    """"1 parameter", "4 parameters"."""
    return "1 parameter" if len(keys) == 1 else f"{len(keys)} parameters"
