"""Resume from a checkpoint that was saved on a GPU machine."""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from make_cuda_checkpoint import make_model, save_as_if_on_cuda  # noqa: E402

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu_checkpoint.pt")
if not os.path.exists(path):
    save_as_if_on_cuda(make_model().state_dict(), path)

device = "cuda" if torch.cuda.is_available() else "cpu"
model = make_model().to(device)
model.load_state_dict(torch.load(path, weights_only=True))
print("resumed")
