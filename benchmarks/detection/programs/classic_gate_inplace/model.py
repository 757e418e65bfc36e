import torch
import torch.nn as nn
import torch.nn.functional as F


class SqueezeExcite(nn.Module):
    def __init__(self, channels, reduction=4):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, channels // reduction, 1)
        self.fc2 = nn.Conv2d(channels // reduction, channels, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = F.relu(self.fc1(s))
        gate = torch.sigmoid(self.fc2(s))
        gate *= 2.0  # expect: TL103 -- sigmoid output is saved for backward
        return x * gate


class ResidualMLP(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.act = nn.ReLU()

    def forward(self, x):
        h = self.act(self.fc(x))
        h += x  # expect: TL103 -- nn.ReLU output is saved for backward
        h = self.fc(h)
        h += x  # safe: TL103 -- a Linear's output is not saved
        return h


if __name__ == "__main__":
    for m, shape in ((SqueezeExcite(8), (2, 8, 5, 5)), (ResidualMLP(8), (2, 8))):
        try:
            m(torch.randn(*shape)).sum().backward()
        except RuntimeError as error:
            print(type(m).__name__, error)
