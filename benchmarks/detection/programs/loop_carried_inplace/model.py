import torch
import torch.nn as nn


class Recurrent(nn.Module):
    """The write at the top of the loop sees the previous iteration's tanh output."""

    def __init__(self, dim=8, steps=3):
        super().__init__()
        self.cell = nn.Linear(dim, dim)
        self.steps = steps

    def forward(self, x):
        h = x
        for _ in range(self.steps):
            h.mul_(0.5)  # expect: TL103 -- from the second step on, h is the tanh output saved for backward
            h = torch.tanh(self.cell(h))
        return h


class RecurrentSafe(nn.Module):
    def __init__(self, dim=8, steps=3):
        super().__init__()
        self.cell = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.steps = steps

    def forward(self, x):
        h = x.clone()
        for _ in range(self.steps):
            h.mul_(0.5)  # safe: TL103 -- h is a clone, then LayerNorm's output: neither is saved for backward
            h = self.norm(torch.tanh(self.cell(h)))
        return h


if __name__ == "__main__":
    for cls in (Recurrent, RecurrentSafe):
        try:
            cls()(torch.randn(4, 8)).sum().backward()
            print(cls.__name__, "ran")
        except RuntimeError as error:
            print(cls.__name__, "raised:", str(error)[:90])
