"""A click model trained with a hand-written binary cross-entropy on raw count features.

The features are not normalised, so some logits are in the hundreds from the first step:
sigmoid rounds them to exactly 1.0 (or 0.0) in float32, `torch.log(1 - p)` is log(0) = -inf
there, 0 * -inf is NaN, and after one optimizer step every weight is NaN.
"""

import torch
from torch import nn

torch.manual_seed(0)
features = torch.randint(0, 500, (64, 8)).float()  # raw counts, not normalised
labels = (features[:, 0] > 250).float()

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

for step in range(4):
    p = torch.sigmoid(model(features)).squeeze(1)
    loss = -(labels * torch.log(p) + (1 - labels) * torch.log(1 - p)).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
