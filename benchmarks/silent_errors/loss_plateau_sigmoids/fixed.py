# fixed twin: normalised ReLU layers, the output follows the input
# Seven sigmoid layers stacked without normalisation: every sample gets the same output and
# the loss sits at 0.2498, flat but not exactly constant.
import torch
from torch import nn

torch.manual_seed(0)
layers = [nn.Linear(8, 16), nn.ReLU()]
for _ in range(6):
    layers += [nn.Linear(16, 16), nn.LayerNorm(16), nn.ReLU()]
model = nn.Sequential(*layers, nn.Linear(16, 1), nn.Sigmoid())
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(64, 8)
y = (x[:, 0] > 0).float().unsqueeze(1)
for step in range(12):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.6f}")
