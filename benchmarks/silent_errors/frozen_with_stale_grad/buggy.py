# expect: TL746
# Two-stage fine-tuning: after a warm-up the backbone is frozen, but its last gradient stays
# in .grad and SGD's momentum keeps moving it.
import torch
from torch import nn

torch.manual_seed(0)
backbone = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
head = nn.Linear(32, 4)
model = nn.Sequential(backbone, head)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
for step in range(8):
    if step == 3:
        for p in backbone.parameters():
            p.requires_grad_(False)
    optimizer.zero_grad(set_to_none=False)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}")
