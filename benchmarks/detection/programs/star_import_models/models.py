import torch.nn as nn

__all__ = ["LeNet"]


class LeNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 6, 5), nn.Tanh(), nn.AvgPool2d(2),
            nn.Conv2d(6, 16, 5), nn.Tanh(), nn.AvgPool2d(2),
        )
        self.fc = nn.Sequential(nn.Linear(16 * 4 * 4, 120), nn.Tanh(), nn.Linear(120, num_classes), nn.Softmax(dim=1))

    def forward(self, x):
        return self.fc(self.conv(x).flatten(1))
