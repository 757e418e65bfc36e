# expect: TL751
# Pretrained weights are loaded, then the custom initialisation runs over the whole model
# and throws them away.
import os
import tempfile

import torch
from torch import nn


def init_weights(module):
    if isinstance(module, nn.Linear):
        nn.init.xavier_uniform_(module.weight)
        nn.init.zeros_(module.bias)


torch.manual_seed(0)
pretrained = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
path = os.path.join(tempfile.mkdtemp(), "pretrained.pt")
torch.save(pretrained.state_dict(), path)

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
model.load_state_dict(torch.load(path, weights_only=True))
model.apply(init_weights)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(64, 8), torch.randint(0, 2, (64,))
for step in range(4):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}")
