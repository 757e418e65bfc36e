"""Checkpoint files written atomically: a crash mid-write never leaves half a file."""
import os

import torch


def _save(obj, f):
    torch.save(obj, f)


def persistent_save(obj, filename: str) -> None:
    partial = filename + ".tmp"
    with open(partial, "wb") as f:
        _save(obj, f)
    os.replace(partial, filename)
