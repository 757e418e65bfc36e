import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5))

    def forward(self, x):
        return self.body(x)
