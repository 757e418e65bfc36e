"""A small classifier with three classic bugs (see train.py for the rest)."""

import torch
import torch.nn.functional as F
from torch import nn


class Classifier(nn.Module):
    def __init__(self, n_in: int = 32, n_hidden: int = 64, n_classes: int = 10):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_in, n_hidden), nn.ReLU())
        self.head = nn.Linear(n_hidden, n_classes)

    def forward(self, x):
        h = self.body(x)
        noise = 0.01 * torch.randn(h.shape[0], h.shape[1])  # created on the CPU whatever x's device
        h = torch.sigmoid(h + noise)
        h += 1.0  # sigmoid saved its output for backward; this edits it in place
        return F.softmax(self.head(h), dim=1)  # probabilities, but train.py uses CrossEntropyLoss
