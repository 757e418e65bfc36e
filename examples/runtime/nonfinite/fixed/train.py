"""The click model of ../buggy/train.py, fixed: the loss takes the logits
(`binary_cross_entropy_with_logits` computes log(sigmoid) without rounding to 0), and the
count features are scaled."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
features = torch.randint(0, 500, (64, 8)).float() / 500  # counts scaled to [0, 1]
labels = (features[:, 0] > 0.5).float()

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

for step in range(4):
    logits = model(features).squeeze(1)
    loss = F.binary_cross_entropy_with_logits(logits, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
