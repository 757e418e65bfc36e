"""A compiled training step (a tiny model, three SGD steps): the same losses with and
without torchlint.

    torchlint run examples/compile/tutorial/train_step.py [--compile]
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


@torch.compile
def train_step(x, y):
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()  # Dynamo breaks the graph here; the step after it is compiled too
    optimizer.step()
    return loss


x, y = torch.randn(16, 4), torch.randn(16, 1)
for step in range(3):
    loss = train_step(x, y)
    print(f"step {step}: loss {loss.item():.5f}")
