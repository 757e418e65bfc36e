"""A gated layer that shifts its gate in place after sigmoid saved it for backward."""

import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, width: int = 8):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        gate = torch.sigmoid(self.proj(x))
        gate += 0.5  # sigmoid's backward needs its output; this edits it in place
        return x * gate


model = Gate()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(4, 8)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("done")
