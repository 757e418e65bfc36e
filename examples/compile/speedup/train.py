"""A wide MLP whose activation is a chain of pointwise operations written out by hand:
eagerly each one reads and writes the whole hidden tensor; Inductor fuses them into one kernel.
`torchlint run --compile --profile` shows the speed-up and which lines the kernel fused.

    torchlint run examples/compile/speedup/train.py --compile --profile --report out/
"""

import torch
from torch import nn


def gelu_tanh(x):
    inner = 0.7978845608 * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + torch.tanh(inner))


class WideMLP(nn.Module):
    def __init__(self, width: int = 2048) -> None:
        super().__init__()
        self.up = nn.Linear(32, width)
        self.down = nn.Linear(width, 10)

    def forward(self, x):
        h = gelu_tanh(self.up(x))
        h = h * torch.sigmoid(h)  # a gate on top: fused into the same kernel
        return self.down(h)


def build():
    return WideMLP(), (torch.randn(512, 32),)


def main() -> None:
    torch.manual_seed(0)
    model = WideMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(4):
        x, y = torch.randn(512, 32), torch.randint(0, 10, (512,))
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
