import torch
import torch.nn as nn


class GatedUnit(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return torch.sigmoid(self.proj(x))


class Encoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return torch.tanh(self.fc(x))


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gate = GatedUnit(dim)
        self.encoder = Encoder(dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        g = self.gate(x)
        g *= 2.0  # expect: TL103 -- GatedUnit.forward returns sigmoid output, which sigmoid's backward needs
        h = self.encoder(x)
        h += x  # expect: TL103 -- Encoder.forward returns tanh output, saved for backward
        n = self.norm(h * g)
        n += x  # safe: TL103 -- LayerNorm's output is not saved for backward
        return n
