"""A binary classifier with one output unit given a multi-class head: the cross-entropy over
one class is exactly 0, and the softmax/argmax accuracy is constant (TL733)."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(64, 8)
y = (x[:, 0] > 0).long()
for epoch in range(3):
    optimizer.zero_grad()
    logits = model(x)
    loss = criterion(logits, torch.zeros_like(y))
    loss.backward()
    optimizer.step()
    predicted = torch.softmax(logits, dim=1).argmax(dim=1)
    print(f"loss {loss.item():.3f} accuracy {(predicted == y).float().mean().item():.2f}")
