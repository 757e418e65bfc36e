from common import *

xs = Variable(torch.linspace(-1, 1, 200).unsqueeze(1))
ys = xs.pow(3) + 0.1 * torch.randn(xs.size())
weights = Variable(torch.randn(1, 4), requires_grad=True)
bias = Variable(torch.zeros(1), requires_grad=True)

for step in range(500):
    features = torch.cat([xs ** p for p in range(4)], dim=1)
    loss = ((features @ weights.t() + bias - ys) ** 2).mean()
    loss.backward()
    weights.sub_(0.01 * weights.grad)  # expect: TL103 -- Variable(..., requires_grad=True) reached through the star import is a leaf; update it under no_grad
    bias.data -= 0.01 * bias.grad.data  # safe: TL103 -- .data is outside autograd
    weights.grad.zero_()
    bias.grad.zero_()
