import torch
import torch.nn as nn


class BasicBlock(nn.Module):
    def __init__(self, planes):
        super().__init__()
        self.conv1 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))  # safe: TL103 -- in-place ReLU on BatchNorm output, which is not saved
        out = self.bn2(self.conv2(out))
        out += identity  # safe: TL103 -- BatchNorm output is not saved for backward
        return self.relu(out)


def ema_update(ema_model, model, decay=0.999):
    with torch.no_grad():
        for e, p in zip(ema_model.parameters(), model.parameters()):
            e.mul_(decay).add_(p, alpha=1 - decay)  # safe: TL103 -- EMA under no_grad


if __name__ == "__main__":
    block, ema = BasicBlock(8), BasicBlock(8)
    block(torch.randn(2, 8, 6, 6)).mean().backward()
    ema_update(ema, block)
