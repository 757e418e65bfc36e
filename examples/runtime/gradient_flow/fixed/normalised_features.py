"""buggy/raw_features.py with the features and targets standardised: the loss goes down."""

import torch
from torch import nn

torch.manual_seed(0)
x = torch.rand(256, 8) * 300
y = x @ torch.rand(8, 1) + 5
x = (x - x.mean(0)) / x.std(0)
y = (y - y.mean()) / y.std()
model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(5):
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.3g}")
