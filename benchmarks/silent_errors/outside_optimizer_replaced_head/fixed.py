# fixed twin: the head is replaced before the optimizer is built
# The classifier is replaced for a new number of classes after the optimizer was built: the
# optimizer still holds the old head's tensors.
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc(self.body(x))


torch.manual_seed(0)
model = Net()
model.fc = nn.Linear(32, 3)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x, y = torch.randn(64, 16), torch.randint(0, 3, (64,))
for step in range(6):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}")
