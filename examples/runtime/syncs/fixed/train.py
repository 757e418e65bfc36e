"""Accuracy counted on the device and read once per step with the loss."""

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
correct = torch.zeros((), device=device)
for step in range(4):
    x = torch.randn(64, 8, device=device)
    y = (x[:, 0] > 0).long()
    optimizer.zero_grad()
    logits = model(x)
    loss = nn.functional.cross_entropy(logits, y)
    loss.backward()
    optimizer.step()
    correct += (logits.argmax(dim=1) == y).sum()
    print(f"step {step} loss {loss.item():.3f}")
print(f"accuracy {correct.item() / 256:.2f}")
