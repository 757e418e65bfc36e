"""Models that carry the loss they are trained with, as a generic trainer expects."""

import torch.nn as nn


class Detector(nn.Module):
    """A binary detector whose head ends in a sigmoid, holding the fused loss."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1), nn.Sigmoid())  # expect: TL109 -- Detector's output is probabilities and its own loss is BCEWithLogitsLoss; train.py combines them
        self.criterion = nn.BCEWithLogitsLoss()

    def forward(self, x):
        return self.body(x).squeeze(1)


class GatedDetector(nn.Module):
    """A squeeze-excitation style gate: the sigmoid scales features, the head outputs logits."""

    def __init__(self):
        super().__init__()
        self.gate = nn.Sequential(nn.Linear(16, 16), nn.Sigmoid())  # safe: TL109 -- a gate multiplied into the features, not the model's output
        self.head = nn.Linear(16, 1)
        self.criterion = nn.BCEWithLogitsLoss()

    def forward(self, x):
        return self.head(x * self.gate(x)).squeeze(1)


class ConfigurableDetector(nn.Module):
    """The final sigmoid only when asked for (an export for a runtime that wants probabilities)."""

    def __init__(self, probabilities=False):
        super().__init__()
        self.head = nn.Linear(16, 1)
        self.act = nn.Sigmoid() if probabilities else nn.Identity()  # safe: TL109 -- built only on request; training builds it without
        self.criterion = nn.BCEWithLogitsLoss()

    def forward(self, x):
        return self.act(self.head(x)).squeeze(1)
