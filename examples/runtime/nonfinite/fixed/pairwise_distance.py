"""The metric-learning loop of ../buggy/pairwise_distance.py, fixed: a small epsilon inside
the square root keeps its derivative finite where two embeddings coincide (the diagonal)."""

import torch
from torch import nn

torch.manual_seed(0)
data = torch.randn(24, 10)
labels = torch.arange(24) % 3

encoder = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 8))
optimizer = torch.optim.SGD(encoder.parameters(), lr=0.05)

for step in range(3):
    emb = encoder(data)
    dist = (((emb[:, None, :] - emb[None, :, :]) ** 2).sum(-1) + 1e-12).sqrt()
    same = labels[:, None] == labels[None, :]
    loss = dist[same].mean() + torch.relu(1.0 - dist[~same]).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
