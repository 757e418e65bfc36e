"""An ordinary training loop that uses the GPU when there is one."""

import torch
import torch.nn.functional as F

from models import NoisyClassifier

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = NoisyClassifier().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(20):
    x = torch.randn(32, 16, device=device)
    y = torch.randint(0, 4, (32,), device=device)
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 5 == 0:
        print(f"step {step} loss {loss.item():.3f}")
