"""Regression on raw features in the hundreds with SGD at lr 0.01: each update overshoots
and the next gradient is larger (TL743); a few steps later the loss is inf."""

import torch
from torch import nn

torch.manual_seed(0)
x = torch.rand(256, 8) * 300           # raw sensor readings, never normalised
y = x @ torch.rand(8, 1) + 5
model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(5):
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.3g}")
