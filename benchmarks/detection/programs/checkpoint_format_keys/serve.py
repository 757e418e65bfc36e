"""Load an exported classifier and name its classes."""
import sys

import torch
import torch.nn as nn

if __name__ == "__main__":
    exported = torch.load(sys.argv[1], weights_only=True)  # expect: TL301 -- weights/classes are export.py's keys; it saves from the GPU
    model = nn.Linear(16, 4)
    model.load_state_dict(exported["weights"])
    print(exported["classes"])
