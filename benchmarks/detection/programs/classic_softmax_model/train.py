import torch
import torch.nn as nn
import torch.nn.functional as F

from models import MnistNet

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = MnistNet().to(device)
probe = nn.Sequential(nn.Linear(784, 10), nn.Softmax(dim=1)).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(list(model.parameters()) + list(probe.parameters()), lr=0.01)

for step in range(500):
    images = torch.randn(64, 1, 28, 28, device=device)
    labels = torch.randint(0, 10, (64,), device=device)
    loss = criterion(model(images), labels)  # expect: TL101 -- MnistNet (models.py) returns softmax
    logits = probe[0](images.flatten(1))
    loss = loss + F.cross_entropy(F.softmax(logits, dim=1), labels)  # expect: TL101 -- softmax written inside the loss call
    loss = loss + criterion(probe(images.flatten(1)), labels)  # expect: TL101 -- Sequential ending in nn.Softmax
    loss = loss + F.cross_entropy(F.log_softmax(logits, dim=1), labels)  # safe: TL101 -- log-probabilities are fine as input
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
