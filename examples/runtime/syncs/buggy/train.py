"""Accuracy counted element by element with `.item()`: on a GPU, 64 host syncs per step, each
waiting for the GPU to drain (TL734). Run it with --device fake-cuda."""

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
correct = 0
for step in range(4):
    x = torch.randn(64, 8, device=device)
    y = (x[:, 0] > 0).long()
    optimizer.zero_grad()
    logits = model(x)
    loss = nn.functional.cross_entropy(logits, y)
    loss.backward()
    optimizer.step()
    predicted = logits.argmax(dim=1)
    for i in range(len(y)):
        correct += (predicted[i] == y[i]).item()
    print(f"step {step} loss {loss.item():.3f}")
print(f"accuracy {correct / 256:.2f}")
