"""One output unit with a binary head: sigmoid and BCEWithLogitsLoss."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
criterion = nn.BCEWithLogitsLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(64, 8)
y = (x[:, 0] > 0).long()
for epoch in range(3):
    optimizer.zero_grad()
    logits = model(x).squeeze(1)
    loss = criterion(logits, y.float())
    loss.backward()
    optimizer.step()
    predicted = (logits > 0).long()
    print(f"loss {loss.item():.3f} accuracy {(predicted == y).float().mean().item():.2f}")
