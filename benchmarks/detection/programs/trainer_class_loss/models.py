import torch.nn as nn
import torch.nn.functional as F


class TabularNet(nn.Module):
    def __init__(self, in_features, hidden, num_classes):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, x):
        return F.softmax(self.head(self.body(x)), dim=1)
