"""The three gradient-flow bugs fixed: every layer is used, gradients are cleared before
backward(), the learning rate is set. The loss goes down."""

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.head = nn.Linear(16, 2)
        self.aux_head = nn.Linear(16, 2)

    def forward(self, x):
        features = torch.relu(self.body(x))
        return self.head(features), self.aux_head(features)


torch.manual_seed(0)
model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
x, y = torch.randn(32, 8), torch.randint(0, 2, (32,))
for step in range(5):
    optimizer.zero_grad()
    main, aux = model(x)
    loss = nn.functional.cross_entropy(main, y) + 0.3 * nn.functional.cross_entropy(aux, y)
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}")
