# expect: TL748
# F.rrelu told training=True draws random slopes in eval() too: the evaluation is random.
import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 64)
        self.fc2 = nn.Linear(64, 4)

    def forward(self, x):
        h = F.rrelu(self.fc1(x), training=True)
        return self.fc2(h)


torch.manual_seed(0)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(128, 16), torch.randint(0, 4, (128,))
for step in range(5):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
model.eval()
with torch.no_grad():
    print(f"accuracy {(model(x).argmax(1) == y).float().mean().item():.3f}")
