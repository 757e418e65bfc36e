# expect: TL745
# Gradient accumulation over 4 micro-batches, but the gradients are cleared once, before the
# loop, not after each step: every step applies everything accumulated since the start.
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(256, 8), torch.randn(256, 1)
accumulate = 4
optimizer.zero_grad()
for i in range(32):
    xb, yb = x[i * 8:(i + 1) * 8], y[i * 8:(i + 1) * 8]
    loss = nn.functional.mse_loss(model(xb), yb) / accumulate
    loss.backward()
    if (i + 1) % accumulate == 0:
        optimizer.step()
print(f"loss {loss.item():.4f}")
