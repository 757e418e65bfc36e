"""Trains a small classifier, then evaluates it, keeping autograd graphs alive both times:
`total_loss += loss` keeps every step's graph, and the evaluation loop, run without
`torch.no_grad()`, keeps every batch's activations in `outputs`."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def batches(count):
    for _ in range(count):
        x, y = torch.randn(16, 1, 16, 16), torch.randint(0, 10, (16,))
        yield x.to(device), y.to(device)


model = Net().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

total_loss = 0
for x, y in batches(6):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    total_loss += loss  # a tensor: keeps this step's graph alive
print(f"mean training loss {total_loss.item() / 6:.3f}")

model.eval()
outputs = []
for x, _ in batches(6):
    outputs.append(model(x))  # no torch.no_grad(): every batch's activations stay
predictions = torch.cat(outputs).argmax(1)
print(f"{len(predictions)} predictions")
