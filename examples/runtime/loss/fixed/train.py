"""The same classifier returning logits; probabilities only for reporting."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(64, 8)
y = torch.randint(0, 3, (64,))
for _ in range(3):
    logits = model(x)
    loss = criterion(logits, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

with torch.no_grad():
    log_probs = F.log_softmax(model(x), dim=1)
    nll = F.nll_loss(log_probs, y)
    confidence = model(x).softmax(dim=1).max(dim=1).values.mean()
print(f"train loss {loss.item():.3f}, eval nll {nll.item():.3f}, confidence {confidence.item():.2f}")
