# fixed twin: a learning rate the net takes
# A learning rate too high for this net: around step 9 one large update pushes every unit of
# the first ReLU below zero for every input, and nothing before it learns again.
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
x = torch.randn(256, 8)
y = x.sum(1, keepdim=True) - 3.0
for step in range(32):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}")
