"""Export the classifier's weights with its class names, for serving."""
import sys

import torch
import torch.nn as nn

CLASSES = ["cat", "dog", "bird", "fish"]


def export(path: str) -> None:
    model = nn.Linear(16, 4).cuda()
    torch.save({"weights": model.state_dict(), "classes": CLASSES}, path)


if __name__ == "__main__":
    export(sys.argv[1])
