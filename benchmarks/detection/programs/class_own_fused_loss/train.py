"""A generic trainer: every model brings its own criterion."""

import torch

from models import ConfigurableDetector, Detector, GatedDetector


def fit(model, steps=20):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        x = torch.randn(8, 16)
        y = (x[:, 0] > 0).float()
        loss = model.criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


if __name__ == "__main__":
    for model in (Detector(), GatedDetector(), ConfigurableDetector()):
        print(type(model).__name__, fit(model))
