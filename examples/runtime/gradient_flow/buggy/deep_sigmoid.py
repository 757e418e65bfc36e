"""Twelve sigmoid layers stacked without normalisation: each multiplies the gradient by at
most 0.25 on its way back, so the first layers get almost none of it (TL742)."""

import torch
from torch import nn

torch.manual_seed(0)
layers = []
for _ in range(12):
    layers += [nn.Linear(32, 32), nn.Sigmoid()]
model = nn.Sequential(*layers, nn.Linear(32, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    x = torch.randn(64, 32)
    y = (x[:, 0] > 0).long()
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
