import torch
from torch import nn, optim

from models import *

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = LeNet().to(device)
criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(model.parameters(), lr=0.05)

for step in range(200):
    images = torch.randn(32, 1, 28, 28).to(device)
    labels = torch.randint(0, 10, (32,)).to(device)
    outputs = model(images)
    loss = criterion(outputs, labels)  # expect: TL101 -- LeNet (star-imported) ends in nn.Softmax
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
