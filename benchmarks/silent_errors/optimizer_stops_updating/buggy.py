# expect: TL752
# An optimizer that caches "nothing to update" when a step finds no gradients (the batch of
# step 3 is empty) and never updates again: the run goes on, the model stops learning.
import torch
from torch import nn


class CachingSGD(torch.optim.SGD):
    def __init__(self, params, lr):
        super().__init__(params, lr=lr)
        self.idle = False

    @torch.no_grad()
    def step(self, closure=None):
        if not any(p.grad is not None for group in self.param_groups for p in group["params"]):
            self.idle = True
        if self.idle:
            return None
        return super().step(closure)


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
optimizer = CachingSGD(model.parameters(), lr=0.05)
x, y = torch.randn(128, 8), torch.randn(128, 1)
for step in range(24):
    optimizer.zero_grad()
    if step != 2:
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}")
