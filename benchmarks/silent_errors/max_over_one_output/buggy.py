# expect: TL733
# A binary classifier with one output unit, scored as if it had one unit per class: the
# predicted index of `max` over dimension 1 is always 0.
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(128, 4)
y = (x[:, 0] > 0).float()
for step in range(6):
    optimizer.zero_grad()
    out = model(x)
    loss = nn.functional.binary_cross_entropy_with_logits(out.squeeze(1), y)
    loss.backward()
    optimizer.step()
    _, predicted = out.max(dim=1, keepdim=True)
    accuracy = (predicted.squeeze(1).float() == y).float().mean()
print(f"accuracy {accuracy.item():.3f}")
