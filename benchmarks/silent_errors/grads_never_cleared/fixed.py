# fixed twin: the helper is given the parameters
# A custom training step that clears gradients through a helper which only clears the ones
# it was given: the list is empty after a refactor.
import torch
from torch import nn


def clear(parameters):
    for p in parameters:
        p.grad = None


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
to_clear = list(model.parameters())
x, y = torch.randn(128, 8), torch.randn(128, 1)
for step in range(8):
    clear(to_clear)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}")
