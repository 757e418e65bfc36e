"""zero_grad() between backward() and step(): every gradient is cleared before the optimizer
sees it, so nothing trains (TL730) and the loss never moves (TL732)."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 8), torch.randint(0, 2, (32,))
for step in range(5):
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
print(f"loss {loss.item():.4f}")
