"""A regression head and a classifier, each with a loss or a metric written by hand.

`nn.Linear(..., 1)` returns [N, 1] and the targets are [N]: the squared error and the
accuracy below compare every prediction with every target, as [N, N] matrices.
"""

import torch
from torch import nn

torch.manual_seed(0)
x = torch.randn(64, 8)
y = x @ torch.randn(8) + 0.1 * torch.randn(64)  # [64]
labels = (y > 0).long()  # [64]

regressor = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
classifier = nn.Linear(8, 2)
optimizer = torch.optim.SGD([*regressor.parameters(), *classifier.parameters()], lr=0.05)

for step in range(3):
    pred = regressor(x)  # [64, 1]
    loss = ((pred - y) ** 2).mean()  # [64, 1] - [64] is [64, 64]
    logits = classifier(x)
    loss = loss + nn.functional.cross_entropy(logits, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

with torch.no_grad():
    predicted = classifier(x).argmax(1, keepdim=True)  # [64, 1]
    accuracy = (predicted == labels).sum().item() / len(labels)  # can exceed 1
print(f"loss {loss.item():.3f}, accuracy {accuracy:.2f}")
