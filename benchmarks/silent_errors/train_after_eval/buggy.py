# expect: TL747
# The evaluation at the end of each epoch switches the model to eval(); the next epoch
# trains on in eval mode, dropout off.
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(256, 16), torch.randint(0, 4, (256,))


def evaluate():
    model.eval()
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


model.train()
for epoch in range(3):
    for i in range(0, 256, 64):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x[i:i + 64]), y[i:i + 64])
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} accuracy {evaluate():.3f}")
