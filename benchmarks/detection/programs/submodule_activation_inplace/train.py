import torch

from model import Block

model = Block(16)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    out = model(torch.randn(4, 16))
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
