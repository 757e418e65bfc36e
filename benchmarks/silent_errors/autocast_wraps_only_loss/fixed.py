# fixed twin: the forward runs inside the autocast region
# Mixed precision whose autocast block wraps only the loss: the model's forward runs in
# float32 before it.
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, y = torch.randn(64, 32), torch.randint(0, 8, (64,))
for step in range(6):
    optimizer.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(x)
        loss = nn.functional.cross_entropy(logits, y)
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}")
