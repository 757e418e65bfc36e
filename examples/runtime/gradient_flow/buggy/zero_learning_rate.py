"""A learning rate that is 0 (an unset option): gradients flow, parameters never change
(TL731), and the loss never moves (TL732)."""

import torch
from torch import nn

LEARNING_RATE = float("0")  # read from a config that never set it

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
x, y = torch.randn(32, 8), torch.randint(0, 2, (32,))
for step in range(5):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}")
