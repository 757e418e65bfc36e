# fixed twin: the optimizer holds the head
# A fine-tuning script: the backbone is frozen, and the optimizer is built over it instead
# of the head. The head gets gradients and never learns.
import torch
from torch import nn

torch.manual_seed(0)
backbone = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
head = nn.Linear(32, 4)
model = nn.Sequential(backbone, head)
for p in backbone.parameters():
    p.requires_grad_(False)
optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
for step in range(6):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}")
