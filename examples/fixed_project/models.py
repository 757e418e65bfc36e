"""The fixed twin of buggy_project/models.py."""

import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self, n_in: int = 32, n_hidden: int = 64, n_classes: int = 10):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_in, n_hidden), nn.ReLU())
        self.head = nn.Linear(n_hidden, n_classes)

    def forward(self, x):
        h = self.body(x)
        noise = 0.01 * torch.randn(h.shape[0], h.shape[1], device=h.device)
        h = torch.sigmoid(h + noise)
        h = h + 1.0
        return self.head(h)  # logits
