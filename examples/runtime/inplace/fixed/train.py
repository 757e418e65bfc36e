"""A gated layer that shifts its gate out of place."""

import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, width: int = 8):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        gate = torch.sigmoid(self.proj(x))
        gate = gate + 0.5
        return x * gate


model = Gate()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(4, 8)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("done")
