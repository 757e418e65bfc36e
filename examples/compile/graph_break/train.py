"""A classifier whose forward branches on a tensor's value and reads a number out of it:
both are graph breaks under torch.compile. The last batch is smaller (a recompilation).

    torchlint run examples/compile/graph_break/train.py --compile
    torchlint run examples/compile/graph_break/train.py:build --compile
"""

import torch
from torch import nn


class GatedMLP(nn.Module):
    def __init__(self, width: int = 32, classes: int = 4) -> None:
        super().__init__()
        self.inp = nn.Linear(16, width)
        self.hidden = nn.Linear(width, width)
        self.out = nn.Linear(width, classes)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        if h.mean() > 0.5:  # data-dependent branch: graph break
            h = h * 0.5
        scale = float(h.abs().max().item())  # .item(): graph break
        h = torch.relu(self.hidden(h)) / (1.0 + scale)
        return self.out(h)


def build():
    torch.manual_seed(0)
    return GatedMLP(), (torch.randn(8, 16),)


def main() -> None:
    torch.manual_seed(0)
    model = GatedMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.randn(40, 16)
    labels = torch.randint(0, 4, (40,))
    for epoch in range(2):
        for start in range(0, 40, 16):  # batches of 16, 16 and 8
            x, y = data[start:start + 16], labels[start:start + 16]
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    print(f"loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
