"""A small CNN that compiles into one graph: no graph break, same outputs as eager.

    torchlint run examples/compile/clean/train.py --compile --steps 3
"""

import torch
from torch import nn


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Linear(16 * 7 * 7, 10)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def main() -> None:
    torch.manual_seed(0)
    model = SmallCNN()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(5):
        x, y = torch.randn(16, 1, 28, 28), torch.randint(0, 10, (16,))
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
