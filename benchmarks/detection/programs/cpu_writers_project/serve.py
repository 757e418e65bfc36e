"""Serve the published classifier; compare it with a reference model downloaded from a hub."""
import sys

import torch
import torch.nn as nn
from huggingface_hub import hf_hub_download


def load_published(path: str) -> nn.Module:
    model = nn.Linear(16, 4).cuda()
    model.load_state_dict(torch.load(path, weights_only=True))  # safe: TL301 -- every writer of this project saves after .cpu()
    return model


def load_reference(repo: str) -> dict:
    return torch.load(hf_hub_download(repo, "reference.pt"), weights_only=True)  # expect: TL301 -- a downloaded file, saved wherever its author trained


if __name__ == "__main__":
    model = load_published(sys.argv[1])
    reference = load_reference(sys.argv[2])
    print(model.weight.shape, sorted(reference))
