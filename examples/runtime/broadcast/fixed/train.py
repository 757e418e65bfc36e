"""The same two heads with the shapes made equal, plus pairwise matrices built on purpose
(a centroid distance matrix and a same-label mask), which are [N, N] by design."""

import torch
from torch import nn

torch.manual_seed(0)
x = torch.randn(64, 8)
y = x @ torch.randn(8) + 0.1 * torch.randn(64)  # [64]
labels = (y > 0).long()  # [64]
centroids = torch.randn(64, 8)

regressor = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
classifier = nn.Linear(8, 2)
optimizer = torch.optim.SGD([*regressor.parameters(), *classifier.parameters()], lr=0.05)

for step in range(3):
    pred = regressor(x).squeeze(-1)  # [64]
    loss = ((pred - y) ** 2).mean()
    logits = classifier(x)
    loss = loss + nn.functional.cross_entropy(logits, labels)
    # Pull samples of one class together: an [N, N] mask and an [N, N] distance matrix.
    same = (labels[:, None] == labels[None, :]).float()
    gaps = (pred.unsqueeze(1) - pred.unsqueeze(0)) ** 2
    loss = loss + 0.01 * (same * gaps).mean()
    spread = (x.unsqueeze(1) - centroids.unsqueeze(0)).pow(2).sum(-1).min(1).values.mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

with torch.no_grad():
    predicted = classifier(x).argmax(1)  # [64]
    accuracy = (predicted == labels).sum().item() / len(labels)
print(f"loss {loss.item():.3f}, accuracy {accuracy:.2f}, spread {spread.item():.2f}")
