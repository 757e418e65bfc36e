"""A script that seeds torch, then draws its jitter from numpy."""

import random

import numpy as np
import torch
import torch.nn as nn


class Jitter:
    def __call__(self, x):
        return x + random.gauss(0.0, 0.01)  # safe: TL612 -- a transform: DataLoader workers seed random from torch's seed


def train(steps=5):
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    jitter = Jitter()
    for _ in range(steps):
        x = torch.randn(8, 4)  # safe: TL612 -- torch is seeded
        x = x + torch.from_numpy(np.random.normal(0, 0.1, size=(8, 4))).float()  # expect: TL612 -- numpy is never seeded
        loss = model(jitter(x)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


if __name__ == "__main__":
    print(train())
