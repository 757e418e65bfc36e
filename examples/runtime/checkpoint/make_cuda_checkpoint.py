"""Write a checkpoint that looks saved on a GPU, on any machine: `python make_cuda_checkpoint.py PATH`.

torch.save asks `torch.serialization.location_tag` where each storage lives; answering
"cuda:0" while saving produces the same file a GPU machine would, so loading it without
map_location on a CPU-only machine raises the real "Attempting to deserialize object on a
CUDA device" error.
"""

import sys
from unittest import mock

import torch
from torch import nn


def make_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def save_as_if_on_cuda(obj, path) -> None:
    with mock.patch.object(torch.serialization, "location_tag", lambda storage: "cuda:0"):
        torch.save(obj, path)


if __name__ == "__main__":
    save_as_if_on_cuda(make_model().state_dict(), sys.argv[1])
