"""Build Jupyter notebooks for tests, written the way Jupyter writes them (one JSON string
per source line, `indent=1`, a final newline) unless a test asks for another layout."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def code(source: str, count: int | None = None, outputs: list | None = None) -> dict:
    return {
        "cell_type": "code",
        "execution_count": count,
        "id": "code-" + _digest(source),
        "metadata": {"tags": ["kept"]},
        "outputs": outputs if outputs is not None else [],
        "source": lines_of(source),
    }


def markdown(text: str) -> dict:
    return {"cell_type": "markdown", "id": "md-" + _digest(text), "metadata": {}, "source": lines_of(text)}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def lines_of(source: str) -> list[str]:
    parts = source.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def notebook(*cells: dict, language: str = "python") -> dict:
    return {
        "cells": list(cells),
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": language, "name": "python3"},
            "language_info": {"name": language, "version": "3.11.7"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def write_notebook(path: Path, document: dict, *, indent: int | None = 1, ensure_ascii: bool = False,
                   final_newline: bool = True) -> Path:
    text = json.dumps(document, indent=indent, ensure_ascii=ensure_ascii)
    path.write_text(text + ("\n" if final_newline else ""), encoding="utf-8")
    return path


STREAM_OUTPUT = {"name": "stdout", "output_type": "stream", "text": ["epoch 1: loss 0.93\n"]}
IMAGE_OUTPUT = {
    "data": {"image/png": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
             "text/plain": ["<Figure size 640x480 with 1 Axes>"]},
    "metadata": {"needs_background": "light"},
    "output_type": "display_data",
}

#: A notebook whose bug spans cells: the model's forward (cell 3) ends in softmax, the loss
#: (cell 5) is CrossEntropyLoss. Cell 1 is markdown; cells 2 and 4 hold magics.
TUTORIAL = notebook(
    markdown("# Training a classifier"),
    code("%matplotlib inline\n!pip install torch\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F", 1),
    code(
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(4, 3)\n\n"
        "    def forward(self, x):\n"
        "        return F.softmax(self.fc(x), dim=1)",
        2,
        [STREAM_OUTPUT],
    ),
    code("%%time\nmodel = Net()\ncriterion = nn.CrossEntropyLoss()\nx = torch.randn(8, 4)\ny = torch.randint(0, 3, (8,))\nmodel?", 3),
    code("loss = criterion(model(x), y)\nloss.backward()", 4, [IMAGE_OUTPUT]),
)
