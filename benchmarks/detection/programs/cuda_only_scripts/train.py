import torch
import torch.nn as nn

from model import Classifier

model = Classifier().cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(10):
    inputs = torch.randn(32, 20).cuda()
    targets = torch.randint(0, 5, (32,)).cuda()
    loss = nn.functional.cross_entropy(model(inputs), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
torch.save(model.state_dict(), "classifier.pt")
