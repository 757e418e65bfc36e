import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self, d, k):
        super().__init__()
        self.fc1 = nn.Linear(d, 128)
        self.fc2 = nn.Linear(128, k)

    def forward(self, x):
        logits = self.fc2(F.relu(self.fc1(x)))
        if not self.training:
            return F.softmax(logits, dim=1)
        return logits


class Wrapper(nn.Module):
    def __init__(self, d, k):
        super().__init__()
        self.body = nn.Linear(d, k)

    def forward(self, x):
        out = self.body(x)
        if not self.training:
            out = out.softmax(dim=-1)
        return out


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Classifier(64, 10).to(device)
wrapper = Wrapper(64, 10).to(device)
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(list(model.parameters()) + list(wrapper.parameters()), lr=0.05)
model.train()
wrapper.train()
for _ in range(100):
    x = torch.randn(32, 64, device=device)
    y = torch.randint(0, 10, (32,), device=device)
    loss = criterion(model(x), y)  # safe: TL101 -- in train mode Classifier returns logits; softmax only under `if not self.training`
    loss = loss + F.cross_entropy(wrapper(x), y)  # safe: TL101 -- Wrapper softmaxes only when not training
    opt.zero_grad()
    loss.backward()
    opt.step()
model.eval()
with torch.no_grad():
    print(model(torch.randn(4, 64, device=device)).argmax(1))
