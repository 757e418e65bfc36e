"""A classifier whose head ends in nn.Softmax, trained with CrossEntropyLoss."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3), nn.Softmax(dim=1))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(64, 8)
y = torch.randint(0, 3, (64,))
for _ in range(3):
    probs = model(x)
    loss = criterion(probs, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

with torch.no_grad():
    eval_probs = model(x)
    nll = F.nll_loss(eval_probs, y)
print(f"train loss {loss.item():.3f}, eval nll {nll.item():.3f}")
