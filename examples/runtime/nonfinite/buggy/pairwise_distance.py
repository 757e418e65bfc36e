"""Metric learning with a hand-written pairwise distance matrix (a contrastive loss).

`sqrt` of the squared distances is 0 on the diagonal (each sample against itself), which the
same-class mask keeps. The forward pass and the loss are finite, but the derivative of sqrt
at 0 is infinite: backward makes every gradient NaN, and after one step every weight is NaN.
"""

import torch
from torch import nn

torch.manual_seed(0)
data = torch.randn(24, 10)
labels = torch.arange(24) % 3

encoder = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 8))
optimizer = torch.optim.SGD(encoder.parameters(), lr=0.05)

for step in range(3):
    emb = encoder(data)
    dist = ((emb[:, None, :] - emb[None, :, :]) ** 2).sum(-1).sqrt()
    same = labels[:, None] == labels[None, :]
    loss = dist[same].mean() + torch.relu(1.0 - dist[~same]).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
