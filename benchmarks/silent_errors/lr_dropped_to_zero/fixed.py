# fixed twin: gamma=0.1
# A step schedule meant to divide the learning rate by 10 at step 4 multiplies it by 0.
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[4], gamma=0.1)
x, y = torch.randn(128, 8), torch.randn(128, 1)
for step in range(24):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    scheduler.step()
print(f"loss {loss.item():.4f}")
