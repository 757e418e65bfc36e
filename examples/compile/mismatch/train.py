"""A model that takes a "fast path" when it is being compiled: the tanh approximation of
GELU. Eager and compiled outputs differ by ~1e-3, far beyond float32's tolerance.

    torchlint run examples/compile/mismatch/train.py --compile
    torchlint run examples/compile/mismatch/train.py:build --compile
"""

import torch
import torch.nn.functional as F
from torch import nn


class Regressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 64)
        self.fc2 = nn.Linear(64, 1)

    def forward(self, x):
        approximate = "tanh" if torch.compiler.is_compiling() else "none"  # a different function when compiled
        return self.fc2(F.gelu(self.fc1(x), approximate=approximate))


def build():
    torch.manual_seed(0)
    return Regressor(), (torch.randn(32, 8) * 3,)


def main() -> None:
    torch.manual_seed(0)
    model = Regressor()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(3):
        x = torch.randn(32, 8) * 3
        loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
