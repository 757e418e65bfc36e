import torch.nn as nn


class StyleNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 3, padding=1))

    def forward(self, x):
        return self.body(x)


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.score = nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 1))

    def forward(self, x):
        return self.score(x)
