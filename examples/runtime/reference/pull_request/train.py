"""A small classifier trained with clipping and a mid-epoch evaluation: a pull request that tidied it up."""

import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 2))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
features = torch.randn(1024, 8)
labels = (features[:, 0] * features[:, 1] > 0).long()


def evaluate(model):
    model.eval()
    with torch.no_grad():
        accuracy = (model(features).argmax(1) == labels).float().mean()
    return accuracy


for step in range(40):
    batch = torch.randint(0, len(features), (64,))
    optimizer.zero_grad()
    loss = F.cross_entropy(model(features[batch]), labels[batch])
    loss.backward()
    optimizer.step()
    if step % 10 == 4:
        print(f"step {step}: loss {loss.item():.3f}, accuracy {evaluate(model):.2f}")
