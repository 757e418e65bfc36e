import torch
import torch.nn as nn


class DropFirstFeature(nn.Module):
    """Zeroes the first feature of every row (a 'bias' slot), in place to save memory."""

    def forward(self, features):
        masked = features
        masked[:, 0] = 0.0  # expect: TL103 -- Encoder passes its sigmoid output, which sigmoid's backward needs
        return masked


class Encoder(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.drop_first = DropFirstFeature()
        self.out = nn.Linear(dim, 4)

    def forward(self, x):
        gates = torch.sigmoid(self.proj(x))
        return self.out(self.drop_first(gates))


if __name__ == "__main__":
    model = Encoder()
    model(torch.randn(8, 16)).sum().backward()
