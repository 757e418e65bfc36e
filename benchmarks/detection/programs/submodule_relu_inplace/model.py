import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvReLU(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)

    def forward(self, x):
        return F.relu(self.conv(x))


class ConvBN(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return self.bn(self.conv(x))


class UNetStage(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.enc = ConvReLU(ch, ch)
        self.proj = ConvBN(ch, ch)

    def forward(self, x, skip):
        h = self.enc(x)
        h += skip  # expect: TL103 -- ConvReLU.forward returns relu output, which relu's backward reads
        p = self.proj(h)
        p += skip  # safe: TL103 -- ConvBN returns BatchNorm output, not saved for backward
        return p


if __name__ == "__main__":
    stage = UNetStage(4)
    x, skip = torch.randn(2, 4, 8, 8), torch.randn(2, 4, 8, 8)
    stage(x, skip).mean().backward()
