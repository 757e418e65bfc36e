import sys

import torch
import torch.nn as nn


def build():
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))


def load_weights(model, path):
    if torch.cuda.is_available():
        state = torch.load(path)  # safe: TL301 -- only runs when CUDA exists; the else branch maps to CPU
        model.cuda()
    else:
        state = torch.load(path, map_location="cpu")
    model.load_state_dict(state)
    return model


if __name__ == "__main__":
    model = load_weights(build(), sys.argv[1])
    device = next(model.parameters()).device
    print(model(torch.randn(4, 32, device=device)).softmax(-1))
