import torch
import torch.nn as nn


def scale_(t, factor):
    t.mul_(factor)  # expect: TL103 -- reached from AttnPool.forward with a softmax output that backward needs
    return t


def clip_(t, bound):
    t.clamp_(-bound, bound)  # safe: TL103 -- only reached under torch.no_grad() (project_weights); on a weight it would raise otherwise
    return t


class AttnPool(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.score = nn.Linear(dim, 1)
        self.temperature = 0.5

    def forward(self, x):
        w = torch.softmax(self.score(x).squeeze(-1), dim=1)
        w = scale_(w, 1.0 / self.temperature)
        return (w.unsqueeze(-1) * x).sum(1)


def project_weights(model, bound=1.0):
    with torch.no_grad():
        clip_(model.score.weight, bound)


if __name__ == "__main__":
    model = AttnPool(8)
    x = torch.randn(2, 5, 8)
    project_weights(model)
    model(x).sum().backward()
