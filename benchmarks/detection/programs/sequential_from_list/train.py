import torch
import torch.nn as nn

from model import PolicyNet

net = PolicyNet(8, 4)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(net.parameters(), lr=3e-4)
for step in range(100):
    observations = torch.randn(32, 8)
    expert_actions = torch.randint(0, 4, (32,))
    loss = criterion(net(observations), expert_actions)  # expect: TL101 -- the Sequential built from a list ends in the Softmax appended last
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
