import torch
import torch.nn as nn
import torch.nn.functional as F


class TwoHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(32, 64), nn.ReLU())
        self.cls = nn.Linear(64, 5)

    def forward(self, x):
        logits = self.cls(self.trunk(x))
        return logits, F.softmax(logits, dim=-1)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = TwoHead().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(20):
    x = torch.randn(16, 32, device=device)
    y = torch.randint(0, 5, (16,), device=device)
    logits, probs = model(x)
    loss = F.cross_entropy(logits, y)  # safe: TL101 -- first tuple element is the logits
    confidence = probs.max(dim=-1).values.mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(loss.item(), confidence.item())
