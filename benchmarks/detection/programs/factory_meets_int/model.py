import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiScalePool(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.proj = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        sizes = torch.zeros(3) + 1  # safe: TL201 -- meets an int only, then turned into Python numbers
        sizes = sizes.cumsum(0) * 2
        pooled = [F.adaptive_avg_pool2d(x, int(s)) for s in sizes.tolist()]
        counts = torch.ones(len(pooled)) * 4  # safe: TL201 -- meets an int, used only through .sum().item()
        feats = [self.proj(p).flatten(2).mean(-1) for p in pooled]
        return torch.stack(feats, 0).sum(0) / counts.sum().item()


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = MultiScalePool(8).to(device)
    print(model(torch.randn(2, 8, 16, 16, device=device)).shape)
